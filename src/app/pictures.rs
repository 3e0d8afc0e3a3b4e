//! Pictures in posts: a writer adds one to a post of theirs, within a quota; a
//! reader's browser loads it without the database; it goes with its post.
//!
//! A picture lives under its writer and post ([`PictureAddress`]). The writer's quota is what
//! is stored under them. Deleting a post removes what is stored under it: C7 at once, and
//! `PostsChangeFeed` when it delivers the tombstone, so a deletion cut short is finished. The
//! post's Markdown refers to it by its address, which carries its size, so the post page reads
//! nothing more for it (Q2 stays one point read).

use super::BadInput;
use std::sync::Arc;

use sha2::Digest;
use tokio::sync::Semaphore;

use crate::cosmos::Container;
use crate::model::picture::{Kind, PictureAddress};
use crate::model::{self, Post};
use crate::pictures::directory::Pieces;
use crate::pictures::prepare::copy_of_stored;
use crate::pictures::verified::KEPT_BYTES;
use crate::pictures::{
    Limits, PictureError, PictureStore, PictureStoreError, Prepared, Usage, Verified, plan,
    prepare_planned, recognise,
};
use crate::striped::StripedLock;

use super::idempotency::Once;
use super::{AppError, AppResult, AppState, Caller, Missing, post_not_found};

/// How many pictures, and how many bytes of them, one writer may keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Quota {
    /// Pictures (a picture and its copies count as one).
    pub pictures: u64,
    /// Bytes, the copies (phones' variants, small copies) included.
    pub bytes: u64,
}

impl Quota {
    /// 200 pictures and 500 MB a writer: a photo blog's year, and on Blob Storage's hot tier
    /// about a cent a month per writer (docs/api.md, "Pictures in posts").
    pub(crate) const DEFAULT: Quota = Quota { pictures: 200, bytes: 500 * 1024 * 1024 };
}

/// Where pictures are kept, and the rules they are taken by.
pub struct Pictures {
    store: Arc<dyn PictureStore>,
    limits: Limits,
    quota: Quota,
    /// One lock per stripe of writers: a writer's uploads take their turn (see [`add_picture`]).
    turns: StripedLock,
    /// One lock per stripe of copies being made on their first request: readers who ask for one
    /// at once wait for the first to make it, rather than each make it in the pictures' memory
    /// ([`made_copy`]).
    making: StripedLock,
    /// Posts the sweep found published: their pictures are never abandoned, so they are not
    /// read again by this process's later sweeps.
    published: std::sync::Mutex<std::collections::HashSet<String>>,
    /// The memory of the uploads being decoded and encoded anew, in KiB: each takes what its
    /// plan says before it is decoded, and gives it back when its blocking task ends.
    memory: Arc<Semaphore>,
    /// All of it, in KiB.
    memory_kib: u32,
    /// The stored files this process checked against their names, by version: served without
    /// being hashed again while their version is the same (bounded: see [`Verified`]).
    verified: Verified,
}

/// How much memory the pictures being prepared may hold at once, in all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PictureMemory {
    /// Bytes.
    pub bytes: u64,
}

impl PictureMemory {
    /// 256 MiB: a 24-megapixel photo (6,000 × 4,000 JPEG) fits. The handler then stays under
    /// about 350 MB with its own memory (docs/api.md, "Pictures in posts"). The checked
    /// pictures it keeps add about 32 MiB more ([`Verified::DEFAULT`]). `infra/` gives a
    /// quarter of the instance's memory (128 MiB on the smallest Flex Consumption instance, 512
    /// MB).
    pub(crate) const DEFAULT: PictureMemory = PictureMemory { bytes: 256 * 1024 * 1024 };
}

/// How many locks the writers' uploads take turns on.
const WRITER_STRIPES: usize = 64;

/// How long an upload waits for memory others' uploads hold before it is refused 503.
const MEMORY_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Pictures {
    /// Pictures kept in `store`, taken within `limits` and `quota`.
    pub(crate) fn new(
        store: Arc<dyn PictureStore>,
        limits: Limits,
        quota: Quota,
        memory: PictureMemory,
    ) -> Pictures {
        let memory_kib = u32::try_from(memory.bytes / 1024).unwrap_or(u32::MAX);
        Pictures {
            store,
            limits,
            quota,
            turns: StripedLock::new(WRITER_STRIPES),
            making: StripedLock::new(WRITER_STRIPES),
            published: Default::default(),
            memory: Arc::new(Semaphore::new(memory_kib as usize)),
            memory_kib,
            verified: Verified::new(Verified::DEFAULT),
        }
    }

    /// Stores `bytes` at `address` (bytes this blog made and named, so as named), and holds the
    /// version written as checked where the store tells it.
    pub(crate) async fn put(
        &self,
        address: &PictureAddress,
        bytes: &[u8],
    ) -> Result<(), PictureStoreError> {
        if let Some(version) = self.store.put(address, bytes).await? {
            self.verified.hold(&address.key(), version, None);
        }
        Ok(())
    }

    /// The quota of each writer.
    pub(crate) fn quota(&self) -> Quota {
        self.quota
    }

    /// Where the pictures are kept: `handler export` and `import` read and write it directly.
    pub(crate) fn store(&self) -> &dyn PictureStore {
        self.store.as_ref()
    }

    /// The lock `writer`'s uploads take turns on (shared with the writers of its stripe).
    fn writer_turn(&self, writer: &str) -> &tokio::sync::Mutex<()> {
        self.turns.of(writer)
    }
}

/// A picture added to a post: where it is, and the Markdown that shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AddedPicture {
    /// Where it is.
    pub address: PictureAddress,
    /// `![alt](address)`, to put in the post.
    pub markdown: String,
    /// Its alt text, as given.
    pub alt: String,
    /// Its format as stored.
    pub kind: Kind,
    /// Its bytes as stored (its copies not counted).
    pub bytes: u64,
    /// What the writer keeps now, this picture included.
    pub usage: Usage,
}

/// The writer's picture store, or why there is none.
fn pictures(state: &AppState) -> AppResult<&Pictures> {
    state.pictures.as_ref().ok_or(AppError::NoPictureStore)
}

/// Where a picture is to go, once the caller may add it there: checked before its bytes are
/// read, so that a refusal (501, 400 for its alt text, 403, 404) costs the blog no body.
#[derive(Debug)]
pub(crate) struct Destination {
    post_id: String,
    alt: String,
}

/// Checks that `caller` may add a picture described by `alt` to the post `target` names: the
/// blog keeps pictures, the alt text is one, and the post is theirs (or the one their form will
/// publish).
pub(crate) async fn destination(
    state: &AppState,
    caller: &Caller,
    target: PictureTarget<'_>,
    alt: &str,
) -> AppResult<Destination> {
    pictures(state)?;
    validate_alt(alt)?;
    let post_id = writers_post(state, caller, target).await?;
    Ok(Destination { post_id, alt: alt.to_owned() })
}

/// Checks that `caller` may add pictures to their post `post_id` (403, 404 otherwise): what a
/// form that edits a post and may carry a picture is checked by before its body is read.
pub(crate) async fn may_add_to(state: &AppState, caller: &Caller, post_id: &str) -> AppResult<()> {
    writers_post(state, caller, PictureTarget::Post(post_id)).await.map(drop)
}

/// Adds `upload` to the post its [`Destination`] names, by its writer only. The upload is
/// recognised, bounded, stripped and encoded anew ([`prepare`]), and counted against the
/// writer's quota. Then it is stored, its copies first, so that no page names a copy that is
/// not there ([`store_prepared`]). The media type the upload came with, if any, is `declared`.
/// A picture type that is not what its bytes are is refused, not guessed past. Adding the same
/// picture twice stores it once and answers the same address.
///
/// [`prepare`]: crate::pictures::prepare
pub(crate) async fn add_picture(
    state: &AppState,
    caller: &Caller,
    destination: Destination,
    upload: bytes::Bytes,
    declared: Option<&str>,
) -> AppResult<AddedPicture> {
    let pictures = pictures(state)?;
    let Destination { post_id, alt } = destination;
    let alt = alt.as_str();
    check_declared(declared, recognise(&upload)?)?;
    let prepared = prepare_off_the_async_threads(pictures, upload).await?;
    let address = PictureAddress {
        owner: caller.id.clone(),
        post: post_id,
        name: prepared.picture.name.clone(),
    };
    let stored = prepared.stored_bytes();
    // The writer's uploads are counted and stored one at a time, so that two at once cannot
    // both pass the quota (within this instance; across instances, each may take one more).
    let _turn = pictures.writer_turn(&caller.id).lock().await;
    // Added before (a request sent again after its answer was lost): the same address, stored
    // once, whatever the quota says now.
    let mut usage = pictures.store.usage(&caller.id).await?;
    if !pictures.store.contains(&address).await? {
        within_quota(pictures.quota, usage, stored)?;
        usage = Usage { pictures: usage.pictures + 1, bytes: usage.bytes + stored };
    }
    store_prepared(pictures, &address, &prepared).await?;
    Ok(AddedPicture {
        markdown: format!("![{}]({})", escape_alt(alt), address.url()),
        alt: alt.to_owned(),
        kind: prepared.picture.kind,
        bytes: prepared.picture.bytes.len() as u64,
        address,
        usage,
    })
}

/// Stores a prepared picture at `address` with its copies. The copies go first, so that no
/// answer or page names a copy that is missing. If a later one or the picture itself is then
/// refused (a full disk, the store gone), the copies it added are taken back. Those that were
/// there before stay (the same picture, added earlier, whose pages name them). Import stores
/// what it prepares the same way.
pub(crate) async fn store_prepared(
    pictures: &Pictures,
    address: &PictureAddress,
    prepared: &Prepared,
) -> Result<(), PictureStoreError> {
    let store = pictures.store();
    let mut added = Vec::new();
    let mut stored = Ok(());
    for copy in prepared.copies() {
        let copy_address = PictureAddress { name: copy.name.clone(), ..address.clone() };
        stored = match store.contains(&copy_address).await {
            Ok(true) => pictures.put(&copy_address, &copy.bytes).await,
            Ok(false) => {
                let put = pictures.put(&copy_address, &copy.bytes).await;
                // Taken back even where its put failed: a store unreachable mid-write may have it.
                added.push(copy_address);
                put
            }
            Err(error) => Err(error),
        };
        if stored.is_err() {
            break;
        }
    }
    if stored.is_ok() {
        stored = pictures.put(address, &prepared.picture.bytes).await;
    }
    if let Err(refused) = stored {
        for copy_address in &added {
            if let Err(error) = store.remove(copy_address).await {
                tracing::warn!(picture = %copy_address.url(), error = %crate::logging::with_causes(&error), "a refused picture's copy could not be taken back");
            }
        }
        return Err(refused);
    }
    Ok(())
}

/// The bytes of the picture at `address`, or not found. Reads no database: the address is all
/// it needs, and a removed post's pictures are removed with it. A stored file is checked
/// against its name once per version ([`checked_as_named`], off the async threads), at its
/// write or its first read in this process. It is not hashed again while its version is the
/// same. A small one checked is kept, and served from memory without reading it while the store
/// says its version is the same. Where asking is billed (Blob Storage), it is served for the
/// store's [`kept_unasked_for`](crate::pictures::store::PictureStore::kept_unasked_for) after
/// its check without asking. A small copy or a screens' copy that a picture stored before they
/// were made at upload lacks is made here, from that picture, and stored ([`made_copy`]): the
/// lists and the post page link to them by their names alone.
pub(crate) async fn picture(state: &AppState, address: &PictureAddress) -> AppResult<PictureBytes> {
    let not_found = || AppError::NotFound(Missing::Picture(address.url()));
    let Some(pictures) = &state.pictures else { return Err(not_found()) };
    let key = address.key();
    if let Some(version) = pictures.store.version_now(address) {
        if let Some(kept) = pictures.verified.kept(&key, &version) {
            return Ok(PictureBytes::InMemory(kept));
        }
        // A large file checked before is sent as it is read, in pieces that end in an error
        // where it changes meanwhile; a small one is read whole below, and kept.
        let large = version.file_length().is_some_and(|length| length > KEPT_BYTES as u64);
        if large
            && pictures.verified.holds(&key, &version)
            && let Some(file) = pictures.store.open_at(address, &version)
        {
            return Ok(PictureBytes::InPieces(Pieces::new(file, version)));
        }
    }
    if let Some(age) = pictures.store.kept_unasked_for()
        && let Some(kept) = pictures.verified.kept_within(&key, age)
    {
        return Ok(PictureBytes::InMemory(kept));
    }
    whole_picture(pictures, address).await?.map(PictureBytes::InMemory).ok_or_else(not_found)
}

/// A picture's bytes as they are answered.
pub(crate) enum PictureBytes {
    /// Whole, in memory: a small file, or one read whole to be checked.
    InMemory(bytes::Bytes),
    /// Read from the disk as they are sent: a large file checked before.
    InPieces(Pieces),
}

/// The picture at `address` read whole and checked against its name where this version of it
/// was not, or made where it is a copy not made yet; `None` where there is none.
async fn whole_picture(
    pictures: &Pictures,
    address: &PictureAddress,
) -> AppResult<Option<bytes::Bytes>> {
    let key = address.key();
    let Some(stored) = pictures.store.read(address).await? else {
        // Made from a picture checked as it was read, and held as checked as it was written.
        return Ok(made_copy(pictures, address).await?.map(bytes::Bytes::from));
    };
    let bytes = bytes::Bytes::from(stored.bytes);
    if let Some(version) = &stored.version
        && pictures.verified.holds(&key, version)
    {
        // A small file held since its write, without its bytes, is kept from now, and its
        // check's age restarts. What was read is that checked version. A large one (never kept)
        // is served as read, the set left as it is.
        if bytes.len() <= KEPT_BYTES {
            pictures.verified.hold(&key, version.clone(), Some(&bytes));
        }
        return Ok(Some(bytes));
    }
    // A file of a copy's size with no hash recorded beside it passes as a copy only where the
    // post holds the picture it is a copy of. An original that happens to be 960 pixels wide is
    // checked against its own name. Listed once per version, as the check is made.
    let copy_of_a_picture = address.name.is_copy_size()
        && stored.recorded_sha256.is_none()
        && pictures
            .store
            .post_pictures(&address.owner, &address.post)
            .await?
            .iter()
            .any(|name| name.copies().contains(&address.name));
    let (bytes, whole) = blocking({
        let address = address.clone();
        let recorded = stored.recorded_sha256;
        move || {
            let whole = checked_as_named(&address, &bytes, recorded.as_deref(), copy_of_a_picture);
            (bytes, whole)
        }
    })
    .await?;
    if !whole {
        // Served, it would be cached for a year under a name that says other bytes.
        tracing::error!(picture = %key, "a stored picture's bytes are not the ones its name says; it is not served");
        return Err(AppError::DamagedPicture(address.url()));
    }
    if let Some(version) = stored.version {
        pictures.verified.hold(&key, version, Some(&bytes));
    }
    Ok(Some(bytes))
}

/// Whether `bytes` are what `address` names, as [`checked_as_named`] says with nothing recorded
/// beside them. A copy's size is taken as a copy. This is for a picture in an export, whose
/// copies the import matches with their pictures itself, and for the picture a copy is made
/// from.
pub(crate) fn is_as_named(address: &PictureAddress, bytes: &[u8]) -> bool {
    checked_as_named(address, bytes, None, true)
}

/// Whether `bytes` are what `address` names: the SHA-256 of its bytes is in the name. A phones'
/// copy, a screens' copy and a small copy are named after their picture's hash, not their own.
/// So one of a copy's size (a JPEG 960 or 1,440 pixels wide; a small copy's size) is checked
/// against `recorded`. That is the SHA-256 its store recorded when it wrote it (Blob Storage's
/// metadata). Sometimes none was recorded: blobs written before, or the data directory, where
/// no place beside a file would keep one through the copies a data directory goes through (`cp`
/// and `rsync` drop extended attributes). Then it passes where `copy_of_a_picture`, the post
/// holding the picture it is a copy of. It is made from a picture that is checked, and a
/// damaged one shows as a damaged small copy, never as the original.
fn checked_as_named(
    address: &PictureAddress,
    bytes: &[u8],
    recorded: Option<&str>,
    copy_of_a_picture: bool,
) -> bool {
    let hash = crate::model::hex(&sha2::Sha256::digest(bytes));
    if hash == address.name.hash() {
        return true;
    }
    address.name.is_copy_size()
        && match recorded {
            Some(recorded) => recorded == hash,
            None => copy_of_a_picture,
        }
}

/// The small copy or screens' copy at `address` made now from the picture of its post it is a
/// copy of, and stored, where there is such a picture. A picture stored before these copies
/// were made at upload has none, and the lists and the post page link to them by their names.
/// Made as an upload is prepared: within the pictures' memory (503 with `Retry-After` where
/// others hold it for [`MEMORY_WAIT`]), off the async threads. It is made from the picture it
/// is made from at upload (for a small copy its phones' variant, or itself; for a screens' copy
/// the picture), and checked as it is served. Not counted against the writer's quota when it is
/// made (a few kilobytes past it for a small copy, a few hundred for a screens' copy, at most).
/// Answers `None` where the name is no copy of a picture there.
async fn made_copy(pictures: &Pictures, address: &PictureAddress) -> AppResult<Option<Vec<u8>>> {
    let (small, screen) = (address.name.is_small_size(), address.name.is_scaled_copy_size());
    if !small && !screen {
        return Ok(None);
    }
    let _making = pictures.making.of(address.key()).lock().await;
    // Made while this request waited its turn.
    if let Some(made) = pictures.store.get(address).await? {
        return Ok(Some(made));
    }
    let size = address.name.size();
    let names = pictures.store.post_pictures(&address.owner, &address.post).await?;
    // Of the pictures it is a copy of (for a small copy a picture, its phones' variant, a larger
    // small copy; for a screens' copy its picture only), the one the upload makes it from. A
    // missing phones' copy is not made here: every upload made one.
    let is_source = |name: &model::picture::PictureName| {
        (small && name.small(size).as_ref() == Some(&address.name))
            || (!small && name.screen().as_ref() == Some(&address.name))
    };
    let Some(source) = names
        .into_iter()
        .filter(|name| name.hash() == address.name.hash() && is_source(name))
        .min_by_key(|name| (name.is_small_size(), name.phone().is_some()))
    else {
        return Ok(None);
    };
    let source = PictureAddress { name: source, ..address.clone() };
    let Some(stored) = pictures.store.get(&source).await? else { return Ok(None) };
    let limits =
        Limits { max_bytes: pictures.limits.max_bytes.max(stored.len()), ..pictures.limits };
    let (stored, source, whole, planned) = blocking(move || {
        let (whole, planned) = (is_as_named(&source, &stored), plan(&stored, &limits));
        (stored, source, whole, planned)
    })
    .await?;
    if !whole {
        tracing::error!(picture = %source.key(), "a stored picture's bytes are not the ones its name says; no copy is made of it");
        return Err(AppError::DamagedPicture(source.url()));
    }
    let planned = planned.map_err(|error| {
        AppError::unexpected_from("a stored picture cannot be read again", error)
    })?;
    let permit = take_memory(pictures, planned.memory).await?;
    let copy = address.name.clone();
    let made = blocking(move || {
        let _permit = permit;
        copy_of_stored(&stored, &planned, &limits, copy)
    })
    .await?;
    let which = if small { "small copy" } else { "screens' copy" };
    let made = made.map_err(|error| {
        AppError::unexpected_from(format!("a stored picture's {which} could not be made"), error)
    })?;
    // Served even where it cannot be stored now: it is made again on the next request.
    match pictures.put(address, &made.bytes).await {
        Ok(()) => {
            tracing::info!(picture = %address.key(), bytes = made.bytes.len(), "made a picture's {which} on its first request")
        }
        Err(error) => {
            tracing::warn!(picture = %address.key(), error = %crate::logging::with_causes(&error), "a picture's {which} was made but not stored")
        }
    }
    Ok(Some(made.bytes))
}

/// What `writer` keeps, and the quota: for the form that says how much is left.
pub(crate) async fn usage(state: &AppState, writer: &str) -> AppResult<(Usage, Quota)> {
    let pictures = pictures(state)?;
    Ok((pictures.store.usage(writer).await?, pictures.quota))
}

/// Removes the pictures of `author`'s post `post_id` (a deleted post's): C7, and the change feed
/// when it delivers the post's tombstone.
pub(crate) async fn remove_post_pictures(
    state: &AppState,
    author: &str,
    post_id: &str,
) -> AppResult<()> {
    let Some(pictures) = &state.pictures else { return Ok(()) };
    pictures.verified.forget_post(author, post_id);
    let removed = pictures.store.remove_post(author, post_id).await?;
    if removed > 0 {
        tracing::info!(post_id, removed, "removed a deleted post's pictures");
    }
    Ok(())
}

/// Which post a picture is added to.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PictureTarget<'a> {
    /// A post of the caller's.
    Post(&'a str),
    /// The post the caller is writing on the write page, not published yet: the one their
    /// form's key will create (C2 derives a keyed post's id from the key, [`Once::item_id`]).
    NewPost,
}

/// The id of the post a picture goes to, once it is the caller's to add to: their post, or the
/// one their form will publish (which must not exist yet, or be theirs).
async fn writers_post(
    state: &AppState,
    caller: &Caller,
    target: PictureTarget<'_>,
) -> AppResult<String> {
    let post_id = match target {
        PictureTarget::Post(post_id) => post_id.to_owned(),
        PictureTarget::NewPost => Once::of(caller, &["createPost"])
            .map(|once| once.item_id())
            .ok_or_else(|| AppError::Invalid(BadInput::PictureWithoutFormKey))?,
    };
    let post = state.store.read::<Post>(Container::Posts, &post_id, &post_id).await?;
    match post {
        // Someone else's draft is not found, as Q2 answers it.
        Some(post) if model::is_live(&post) && model::readable_by(&post, Some(&caller.id)) => {
            caller.must_be(&post.user_id, "add pictures to this post")?
        }
        None if matches!(target, PictureTarget::NewPost) => {}
        _ => return Err(post_not_found(&post_id)),
    }
    Ok(post_id)
}

/// How long the pictures added to a post that was never published are kept: a writer may leave
/// the write page open that long, and publish with the pictures they added.
pub(crate) const ABANDONED_AFTER: std::time::Duration =
    std::time::Duration::from_secs(7 * 24 * 60 * 60);

/// How often a handler sweeps the abandoned pictures away.
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// Removes the pictures of posts that do not exist and whose last picture is older than
/// `older_than`. Those are pictures added on the write page to a post never published, so that
/// they do not count against the writer's quota for ever. The form's key names a post id before
/// the post exists ([`PictureTarget::NewPost`]). It also removes a deleted post's pictures, if
/// their removal failed. One point read per post with pictures, once per process for those
/// found published. Answers how many posts' pictures it removed.
pub async fn sweep_abandoned_pictures(
    state: &AppState,
    older_than: std::time::Duration,
) -> AppResult<usize> {
    let Some(pictures) = &state.pictures else { return Ok(0) };
    let cutoff = std::time::SystemTime::now() - older_than;
    let mut removed = 0;
    for folder in pictures.store.folders().await? {
        let known = pictures.published.lock().expect("not poisoned").contains(&folder.post);
        if folder.last_written > cutoff || known || crate::model::validate_id(&folder.post).is_err()
        {
            continue;
        }
        match state.store.read::<Post>(Container::Posts, &folder.post, &folder.post).await? {
            Some(post) if model::is_live(&post) => {
                pictures.published.lock().expect("not poisoned").insert(folder.post);
            }
            _ => {
                let files = pictures.store.remove_post(&folder.owner, &folder.post).await?;
                tracing::info!(
                    owner = folder.owner,
                    post_id = folder.post,
                    files,
                    "removed the pictures of a post never published"
                );
                removed += 1;
            }
        }
    }
    Ok(removed)
}

/// Sweeps the abandoned pictures once a day, the first time an hour after the start. The task
/// holds the blog's state only while it sweeps, so that a blog that stops lets go of its store
/// (and of the data directory's lock) at once; it ends at its next wake.
pub(crate) fn spawn_sweep(state: &AppState) {
    if state.pictures.is_none() {
        return;
    }
    let blog = state.downgrade();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_secs(60 * 60)).await;
        while let Some(state) = blog.upgrade() {
            if let Err(error) = sweep_abandoned_pictures(&state, ABANDONED_AFTER).await {
                tracing::warn!(error = %crate::logging::with_causes(&error), "the sweep of abandoned pictures failed; it runs again tomorrow");
            }
            drop(state);
            tokio::time::sleep(SWEEP_EVERY).await;
        }
    });
}

fn within_quota(quota: Quota, usage: Usage, adding: u64) -> AppResult<()> {
    if usage.pictures + 1 > quota.pictures || usage.bytes + adding > quota.bytes {
        return Err(AppError::QuotaFull {
            pictures: usage.pictures,
            bytes: usage.bytes,
            max_pictures: quota.pictures,
            max_bytes: quota.bytes,
        });
    }
    Ok(())
}

/// Prepares `upload` off the async threads within the pictures' memory: its header is read
/// first ([`plan`]), the memory it says is taken, and only then is it decoded. The memory's
/// permit is moved into the blocking task, so that it is given back when the decoding ends, not
/// when the request does. A request cut off by its budget or its client leaves its decode
/// running (a blocking task cannot be stopped). That decode still holds its memory, so no other
/// starts beside it past the budget. An upload whose own plan is more than all of it is refused
/// 422; one that finds it in use by others for [`MEMORY_WAIT`] is refused 503.
async fn prepare_off_the_async_threads(
    pictures: &Pictures,
    upload: bytes::Bytes,
) -> AppResult<Prepared> {
    let limits = pictures.limits;
    let (upload, planned) = blocking(move || {
        let planned = plan(&upload, &limits);
        (upload, planned)
    })
    .await?;
    let planned = planned?;
    let permit = take_memory(pictures, planned.memory).await?;
    let prepared = blocking(move || {
        let _permit = permit;
        prepare_planned(&upload, &planned, &limits)
    })
    .await?;
    Ok(prepared?)
}

/// Takes `memory` bytes of the pictures' memory for a picture's decoding: 422 where that is more
/// than all of it, 503 where others hold it for [`MEMORY_WAIT`].
async fn take_memory(
    pictures: &Pictures,
    memory: u64,
) -> AppResult<tokio::sync::OwnedSemaphorePermit> {
    let kib = u32::try_from(memory.div_ceil(1024)).unwrap_or(u32::MAX);
    if kib > pictures.memory_kib {
        return Err(PictureError::OverMemory {
            needed: memory,
            budget: u64::from(pictures.memory_kib) * 1024,
        }
        .into());
    }
    let permit = match pictures.memory.clone().try_acquire_many_owned(kib) {
        Ok(permit) => Ok(Ok(permit)),
        Err(_) => {
            // Others' pictures hold it (a decoding whose request was cut off included).
            tracing::info!(
                needed_mib = memory.div_ceil(1024 * 1024),
                free_mib = pictures.memory.available_permits() / 1024,
                "a picture waits for the memory others hold"
            );
            tokio::time::timeout(MEMORY_WAIT, pictures.memory.clone().acquire_many_owned(kib)).await
        }
    };
    permit
        .map_err(|_| AppError::PicturesBusy { retry_after: MEMORY_WAIT })?
        .map_err(|_| AppError::unexpected("the pictures' memory closed"))
}

impl Pictures {
    /// Prepares `stored`, a picture as a blog stored it (`handler import`), as an upload is
    /// prepared ([`prepare_off_the_async_threads`]). The limits are the same, but for the
    /// upload's size, which is `max_bytes` here: a picture as stored can be larger than the
    /// upload it was made from (a JPEG encoded anew at quality 90). It is prepared within the
    /// pictures' memory, waiting for it as long as others hold it.
    pub(crate) async fn prepare_stored(
        &self,
        stored: Vec<u8>,
        max_bytes: usize,
    ) -> Result<Prepared, PictureError> {
        let limits = Limits { max_bytes: self.limits.max_bytes.max(max_bytes), ..self.limits };
        let died = |error: tokio::task::JoinError| {
            PictureError::Unreadable(format!("preparing it failed: {error}"))
        };
        let (stored, planned) = tokio::task::spawn_blocking(move || {
            let planned = plan(&stored, &limits);
            (stored, planned)
        })
        .await
        .map_err(died)?;
        let planned = planned?;
        let kib = u32::try_from(planned.memory.div_ceil(1024)).unwrap_or(u32::MAX);
        if kib > self.memory_kib {
            return Err(PictureError::OverMemory {
                needed: planned.memory,
                budget: u64::from(self.memory_kib) * 1024,
            });
        }
        let permit = self
            .memory
            .clone()
            .acquire_many_owned(kib)
            .await
            .map_err(|_| PictureError::Unreadable("the pictures' memory closed".into()))?;
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            prepare_planned(&stored, &planned, &limits)
        })
        .await
        .map_err(died)?
    }
}

async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> AppResult<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| AppError::unexpected_from("preparing a picture failed", error))
}

/// A declared media type must be the type of the bytes (or say nothing: octet-stream): a
/// picture declared as another, or as anything else, is refused, not guessed past.
fn check_declared(declared: Option<&str>, uploaded: Kind) -> AppResult<()> {
    let Some(declared) =
        declared.map(|value| value.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
    else {
        return Ok(());
    };
    // `image/jpg` is what some clients send for JPEG.
    if declared == "application/octet-stream"
        || declared == uploaded.media_type()
        || (declared == "image/jpg" && uploaded == Kind::Jpeg)
    {
        return Ok(());
    }
    Err(AppError::WrongMediaType {
        declared: declared.to_owned(),
        format: uploaded.extension(),
        media_type: uploaded.media_type(),
    })
}

/// The longest alt text: it is read out whole by screen readers.
const MAX_ALT_CHARS: usize = 300;

/// Alt text: one line, at most [`MAX_ALT_CHARS`] characters.
fn validate_alt(alt: &str) -> AppResult<()> {
    let chars = alt.chars().count();
    if chars > MAX_ALT_CHARS {
        return Err(AppError::Invalid(BadInput::TooLong {
            field: "alt",
            max_chars: MAX_ALT_CHARS,
            chars,
        }));
    }
    if let Some(bad) = alt.chars().find(|c| c.is_control()) {
        return Err(AppError::Invalid(BadInput::AltNotOneLine(bad)));
    }
    Ok(())
}

/// Alt text as the text of a Markdown image: its brackets and backslashes escaped, so that it
/// cannot end the image or start another.
fn escape_alt(alt: &str) -> String {
    let mut escaped = String::with_capacity(alt.len());
    for c in alt.chars() {
        if matches!(c, '\\' | '[' | ']' | '*' | '_' | '`' | '<' | '!' | '&') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::{checked_as_named, escape_alt};
    use crate::model::picture::{PictureAddress, PictureName};

    fn address(name: &str) -> PictureAddress {
        PictureAddress {
            owner: "w".into(),
            post: "p".into(),
            name: PictureName::parse(name).expect("a name"),
        }
    }

    /// A picture is checked against the hash in its name; a phones' or a screens' copy (named
    /// after its picture) against the SHA-256 its store recorded, and passes by its size where
    /// none was.
    #[test]
    fn each_picture_is_checked_against_what_names_it() {
        let bytes = b"the bytes";
        let hash = crate::model::hex(&<sha2::Sha256 as sha2::Digest>::digest(bytes));
        let other = "0".repeat(64);
        for copy_of_a_picture in [false, true] {
            assert!(checked_as_named(
                &address(&format!("{hash}-2000x1500.jpg")),
                bytes,
                None,
                copy_of_a_picture
            ));
            assert!(!checked_as_named(
                &address(&format!("{other}-2000x1500.jpg")),
                bytes,
                None,
                copy_of_a_picture
            ));
            let recorded = Some(hash.as_str());
            assert!(
                !checked_as_named(
                    &address(&format!("{other}-2000x1500.jpg")),
                    bytes,
                    recorded,
                    true
                ),
                "a record is no name"
            );
            assert!(
                checked_as_named(
                    &address(&format!("{hash}-960x720.jpg")),
                    bytes,
                    None,
                    copy_of_a_picture
                ),
                "960 wide, itself"
            );
        }
        let phone = address(&format!("{other}-960x720.jpg"));
        assert!(checked_as_named(&phone, bytes, Some(&hash), false));
        assert!(!checked_as_named(&phone, bytes, Some(&other), true));
        assert!(
            checked_as_named(&phone, bytes, None, true),
            "nothing recorded: as a copy of the post's picture"
        );
        assert!(
            !checked_as_named(&phone, bytes, None, false),
            "nothing recorded, and no picture it is a copy of"
        );
        assert!(
            !checked_as_named(&address(&format!("{other}-960x720.png")), bytes, None, true),
            "a PNG is never a phones' copy"
        );
        let screen = address(&format!("{other}-1440x1080.jpg"));
        assert!(
            checked_as_named(&screen, bytes, Some(&hash), false),
            "a screens' copy, by its record"
        );
        assert!(!checked_as_named(&screen, bytes, Some(&other), true));
        assert!(checked_as_named(&screen, bytes, None, true), "a screens' copy, as its picture's");
        assert!(
            !checked_as_named(&address(&format!("{other}-1441x1080.jpg")), bytes, None, true),
            "no copy is 1,441 wide"
        );
    }

    /// Alt text with Markdown's own marks in it shows as typed: it cannot end the image, start
    /// another or be taken as emphasis.
    #[test]
    fn alt_text_is_shown_as_typed() {
        let alt = r"A [red] *kite*, ![not an image](x) \ & <b>";
        let html = crate::model::markdown::to_html(
            &format!("![{}](/elsewhere.png)", escape_alt(alt)),
            crate::model::markdown::Pictures::None,
            2,
        );
        assert!(
            html.contains("Image: A [red] *kite*, ![not an image](x) \\ &amp; &lt;b&gt;"),
            "{html}"
        );
    }
}
