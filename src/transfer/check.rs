//! The file's lines, read one at a time and checked by the rules the API applies to what it
//! writes; what needs the store is left to the import.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Seek};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::app::revisions::MAX_REVISIONS;
use crate::model::picture::{PictureAddress, PictureName};
use crate::model::usernames::normalize_username;
use crate::model::{self, Comment, Like, MAX_COMMENT_CHARS, Post, PostStatus, Revision, User};

use super::{Counts, End, FORMAT, Item, MAX_LINE_BYTES, NotWhole, TransferError, VERSION};

/// The lines of a file, read one at a time and checked ([`Checker`]).
pub(crate) struct Reader<R> {
    input: R,
    pub(super) checker: Checker,
    buffer: Vec<u8>,
    /// Bytes read so far.
    pub(super) bytes: u64,
}

impl<R: BufRead + Seek> Reader<R> {
    /// `sealed`: whether the file must end with its last line (always, but for the fuzzer's
    /// inputs, which cannot make a digest).
    pub(crate) fn new(input: R, keeps_pictures: bool, sealed: bool) -> Reader<R> {
        Reader {
            input,
            checker: Checker::new(keeps_pictures, sealed),
            buffer: Vec::new(),
            bytes: 0,
        }
    }

    /// The next item, checked; `None` at the end of a file that is whole.
    pub(crate) fn next(&mut self) -> Result<Option<Item>, TransferError> {
        loop {
            self.buffer.clear();
            let read = read_line(&mut self.input, &mut self.buffer)?;
            if read == 0 {
                return self.checker.at_end().map(|()| None);
            }
            self.bytes += read as u64;
            self.checker.line += 1;
            let line = self.checker.line;
            if read > MAX_LINE_BYTES {
                let why =
                    format!("longer than {MAX_LINE_BYTES} bytes, which no line of an export is");
                return Err(TransferError::Malformed { line, why });
            }
            let Ok(text) = std::str::from_utf8(&self.buffer) else {
                return Err(TransferError::Malformed { line, why: "not UTF-8 text".into() });
            };
            let item = self.checker.check(text)?;
            // A picture's line is let go once read: its bytes are all that is held of it while
            // the picture is prepared.
            if self.buffer.capacity() > KEPT_BUFFER_BYTES {
                self.buffer = Vec::new();
            }
            if let Some(item) = item {
                return Ok(Some(item));
            }
        }
    }
}

/// The line buffer kept from one line to the next; a larger one (a picture's) is let go.
const KEPT_BUFFER_BYTES: usize = 1024 * 1024;

/// Reads `input` up to and with the next line break, or to its end, into `line` (empty), and
/// answers how many bytes it read, or `MAX_LINE_BYTES + 1` for a longer line, which is not
/// held. A line within the reader's buffer is copied from it. A longer one is measured first,
/// reading on without holding it, then read again from its start into room of its own length.
/// So never more than the line is held, and never a copy of it while it grows.
fn read_line(
    input: &mut (impl BufRead + Seek),
    line: &mut Vec<u8>,
) -> Result<usize, TransferError> {
    let available = input.fill_buf().map_err(TransferError::Io)?;
    if let Some(at) = memchr::memchr(b'\n', available) {
        line.extend_from_slice(&available[..=at]);
        input.consume(at + 1);
        return Ok(at + 1);
    }
    let start = input.stream_position().map_err(TransferError::Io)?;
    let mut length = 0;
    loop {
        let available = input.fill_buf().map_err(TransferError::Io)?;
        if available.is_empty() {
            break;
        }
        let (taken, ended) = match memchr::memchr(b'\n', available) {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        length += taken;
        input.consume(taken);
        if length > MAX_LINE_BYTES {
            return Ok(MAX_LINE_BYTES + 1);
        }
        if ended {
            break;
        }
    }
    input.seek(std::io::SeekFrom::Start(start)).map_err(TransferError::Io)?;
    line.try_reserve_exact(length)
        .map_err(|error| TransferError::Io(std::io::Error::other(error)))?;
    line.resize(length, 0);
    input.read_exact(line).map_err(TransferError::Io)?;
    Ok(length)
}

/// The checks of a file's lines that need nothing but the file, and what they leave to the
/// store ([`check_in_store`]).
pub(crate) struct Checker {
    keeps_pictures: bool,
    sealed: bool,
    /// The line being checked, from 1.
    pub(super) line: usize,
    /// The SHA-256 of the lines before the last one.
    digest: Sha256,
    pub(super) counts: Counts,
    /// The last line's number, once read.
    end: Option<usize>,
    /// The file's SHA-256 (what its last line says, and is), once read.
    pub(super) sha256: Option<String>,
    /// The file's users: id → line.
    users: HashMap<String, usize>,
    /// The file's users' names: normalized → (line, user, name as written).
    pub(super) names: HashMap<String, (usize, String, String)>,
    /// Users the file's items name that are not (yet) among its users: id → first line.
    pub(super) elsewhere: std::collections::BTreeMap<String, usize>,
    /// Every post of the file: id → (line, author, comments, likes).
    pub(super) posts: HashMap<String, (usize, String, u64, u64)>,
    /// The post whose comments, likes and pictures follow.
    current: Option<CurrentPost>,
    /// The writers whose pictures the file holds.
    pub(super) picture_owners: std::collections::BTreeSet<String>,
}

/// The post being read, and what of it has been read.
struct CurrentPost {
    line: usize,
    post: Post,
    comments: u64,
    likes: u64,
    /// The revisions its edits have kept, ever (`revisionCount`): its revisions' numbers are
    /// below it, and among the newest the post keeps.
    revisions: u64,
    /// Ids in its partition (its own included), and its pictures' names.
    ids: HashSet<String>,
}

impl Checker {
    fn new(keeps_pictures: bool, sealed: bool) -> Checker {
        Checker {
            keeps_pictures,
            sealed,
            line: 0,
            digest: Sha256::new(),
            counts: Counts::default(),
            end: None,
            sha256: None,
            users: HashMap::new(),
            names: HashMap::new(),
            elsewhere: Default::default(),
            posts: HashMap::new(),
            current: None,
            picture_owners: Default::default(),
        }
    }

    fn malformed(&self, why: impl Into<String>) -> TransferError {
        TransferError::Malformed { line: self.line, why: sentence_part(why.into()) }
    }

    /// The API's own words for what is wrong with `field` (its messages are sentences: said
    /// here as part of one).
    fn field(&self, field: &'static str, why: impl std::fmt::Display) -> TransferError {
        TransferError::Field { line: self.line, field, why: sentence_part(why.to_string()) }
    }

    /// Checks line `self.line`, whose text (with its line break) is `raw`: the item it holds,
    /// if it holds one.
    fn check(&mut self, raw: &str) -> Result<Option<Item>, TransferError> {
        let text = raw.trim();
        if let Some(end) = self.end {
            return if text.is_empty() {
                Ok(None)
            } else {
                Err(TransferError::NotWhole(NotWhole::AfterEnd { line: self.line, end }))
            };
        }
        if text.is_empty() {
            self.digest.update(raw.as_bytes());
            return Ok(None);
        }
        let is_picture = serde_json::from_str::<Peek<'_>>(text)
            .is_ok_and(|peek| peek.kind.as_deref() == Some("picture"));
        if self.line > 1 && is_picture {
            // Read without a copy of its bytes' base64 (most of the line).
            self.digest.update(raw.as_bytes());
            let line: PictureLine<'_> = serde_json::from_str(text).map_err(|error| {
                self.malformed(format!("not a \"picture\" as the blog stores one: {error}"))
            })?;
            let (address, bytes) = self.picture(line)?;
            return Ok(Some(Item::Picture(address, bytes)));
        }
        let value: Value = serde_json::from_str(text)
            .map_err(|error| self.malformed(format!("not JSON: {error}")))?;
        if self.line > 1 && value.get("format").is_some() && value.get("end").is_some() {
            return self.last_line(value).map(|()| None);
        }
        // Every line before the last one is in the digest.
        self.digest.update(raw.as_bytes());
        if self.line == 1 {
            return self.header(&value).map(|()| None);
        }
        let kind = value["type"].as_str().map(str::to_owned);
        let item = match kind.as_deref() {
            Some("user") => Item::User(self.user(self.shape(value)?)?),
            Some("post") => {
                let revisions = match value.get("revisionCount") {
                    None => 0,
                    Some(count) => count.as_u64().ok_or_else(|| {
                        self.field("revisionCount", "a count of revisions is a whole number")
                    })?,
                };
                Item::Post(self.post(self.shape(value)?, revisions)?, revisions)
            }
            Some("comment") => Item::Comment(self.comment(self.shape(value)?)?),
            Some("like") => Item::Like(self.like(self.shape(value)?)?),
            Some("revision") => Item::Revision(self.revision(self.shape(value)?)?),
            other => {
                let found = other.map_or_else(|| "missing".to_owned(), |kind| format!("{kind:?}"));
                return Err(self.malformed(format!(
                    "`type` is {found}, not user, post, comment, like, revision or picture"
                )));
            }
        };
        Ok(Some(item))
    }

    fn header(&self, header: &Value) -> Result<(), TransferError> {
        if header["format"] == FORMAT && header["version"] == 1 {
            return Err(TransferError::NotWhole(NotWhole::Version1));
        }
        if header["format"] != FORMAT || header["version"] != VERSION {
            return Err(self.malformed(format!(
                "not the header of a {FORMAT} export, version {VERSION}: {header}"
            )));
        }
        Ok(())
    }

    fn shape<T: serde::de::DeserializeOwned>(&self, value: Value) -> Result<T, TransferError> {
        let kind = value["type"].clone();
        serde_json::from_value(value).map_err(|error| {
            self.malformed(format!("not a {kind} as the blog stores one: {error}"))
        })
    }

    fn user(&mut self, user: User) -> Result<User, TransferError> {
        model::validate_id(&user.id).map_err(|why| self.field("id", why))?;
        if user.user_id != user.id {
            return Err(self.field(
                "userId",
                format!(
                    "{:?} is not the user's `id`, {:?}: its partition key is its id",
                    user.user_id, user.id
                ),
            ));
        }
        let username = crate::app::users::valid_username(user.username.clone())
            .map_err(|why| self.field("username", why))?;
        if let Some(at) = &user.renamed_at {
            self.date("renamedAt", at)?;
        }
        if let Some(other) = self.users.insert(user.id.clone(), self.line) {
            return Err(self.field("id", format!("user {:?} is on line {other} too", user.id)));
        }
        let normalized = normalize_username(&username);
        if let Some((other_line, _, other_name)) = self.names.get(&normalized) {
            let (other_line, other_name) = (*other_line, other_name.clone());
            return Err(TransferError::NameTwice {
                line: self.line,
                name: username,
                other_line,
                other_name,
            });
        }
        self.names.insert(normalized, (self.line, user.id.clone(), username));
        self.elsewhere.remove(&user.id);
        self.counts.users += 1;
        Ok(user)
    }

    fn post(&mut self, post: Post, revisions: u64) -> Result<Post, TransferError> {
        self.end_of_post()?;
        // A post's first picture is derived, on its short copies only, which the import makes
        // again: never stored with the post.
        let post = Post { picture: None, ..post };
        model::validate_id(&post.id).map_err(|why| self.field("id", why))?;
        if post.post_id != post.id {
            return Err(self.field(
                "postId",
                format!(
                    "{:?} is not the post's `id`, {:?}: its partition key is its id",
                    post.post_id, post.id
                ),
            ));
        }
        crate::app::posts::validate_post_text(&post.title, &post.content)
            .map_err(|why| self.malformed(why.to_string()))?;
        // Each tag is a copy in `tags` once imported: what the API refuses is refused here.
        model::tags::valid_tags(post.tags.clone()).map_err(|why| self.field("tags", why))?;
        if post.deleted {
            return Err(self.field("deleted", "a deleted post, which no export holds"));
        }
        self.writer(&post.user_id, &post.user_username)?;
        self.date("creationDate", &post.creation_date)?;
        if let Some(at) = &post.edited_at {
            self.date("editedAt", at)?;
        }
        // A scheduled post has its time, and no other post has one: the timer lists the first.
        match (post.status, &post.publish_at) {
            (PostStatus::Scheduled, Some(at)) => self.date("publishAt", at)?,
            (PostStatus::Scheduled, None) => {
                return Err(self.field("publishAt", "a scheduled post without its time"));
            }
            (_, Some(_)) => {
                return Err(self.field("publishAt", "a time on a post that is not scheduled"));
            }
            (_, None) => {}
        }
        let listed = (self.line, post.user_id.clone(), post.comment_count, post.like_count);
        if self.posts.insert(post.id.clone(), listed).is_some() {
            return Err(self.field("id", format!("post {:?} is in the file twice", post.id)));
        }
        let ids = HashSet::from([post.id.clone()]);
        self.current = Some(CurrentPost {
            line: self.line,
            post: post.clone(),
            comments: 0,
            likes: 0,
            revisions,
            ids,
        });
        self.counts.posts += 1;
        Ok(post)
    }

    fn comment(&mut self, comment: Comment) -> Result<Comment, TransferError> {
        self.of_current_post("comment", &comment.post_id, &comment.id)?;
        crate::app::validate_text("content", &comment.content, MAX_COMMENT_CHARS, true)
            .map_err(|why| self.field("content", why))?;
        self.writer(&comment.user_id, &comment.user_username)?;
        self.date("creationDate", &comment.creation_date)?;
        self.current.as_mut().expect("checked: a post is being read").comments += 1;
        self.counts.comments += 1;
        Ok(comment)
    }

    fn like(&mut self, like: Like) -> Result<Like, TransferError> {
        self.of_current_post("like", &like.post_id, &like.id)?;
        self.writer(&like.user_id, &like.user_username)?;
        if like.id != model::like_id(&like.user_id) {
            let why = format!(
                "{:?} is not {:?}: a like's id is its writer's, one like a user and post",
                like.id,
                model::like_id(&like.user_id)
            );
            return Err(self.field("id", why));
        }
        self.date("creationDate", &like.creation_date)?;
        self.current.as_mut().expect("checked: a post is being read").likes += 1;
        self.counts.likes += 1;
        Ok(like)
    }

    fn revision(&mut self, revision: Revision) -> Result<Revision, TransferError> {
        self.of_current_post("revision", &revision.post_id, &revision.id)?;
        let count = self.current.as_ref().expect("checked: a post is being read").revisions;
        let kept = count.saturating_sub(MAX_REVISIONS)..count;
        if !kept.contains(&revision.number) {
            let why = format!(
                "revision {} of a post whose edits kept {count}: its revisions are numbered {kept:?}",
                revision.number
            );
            return Err(self.field("number", why));
        }
        if revision.id != model::revision_id(revision.number) {
            let why = format!("{:?} is not {:?}", revision.id, model::revision_id(revision.number));
            return Err(self.field("id", why));
        }
        crate::app::posts::validate_post_text(&revision.title, &revision.content)
            .map_err(|why| self.malformed(why.to_string()))?;
        model::tags::valid_tags(revision.tags.clone()).map_err(|why| self.field("tags", why))?;
        self.date("writtenAt", &revision.written_at)?;
        self.date("replacedAt", &revision.replaced_at)?;
        self.counts.revisions += 1;
        Ok(revision)
    }

    fn picture(
        &mut self,
        picture: PictureLine<'_>,
    ) -> Result<(PictureAddress, Vec<u8>), TransferError> {
        if !self.keeps_pictures {
            return Err(TransferError::NoPictureStore { line: self.line });
        }
        self.of_current_post("picture", &picture.post_id, &picture.name)?;
        let author = &self.current.as_ref().expect("checked: a post is being read").post.user_id;
        if picture.user_id != *author {
            return Err(self.field(
                "userId",
                format!(
                    "{:?} is not the post's author, {author:?}, whose pictures it keeps",
                    picture.user_id
                ),
            ));
        }
        let name = PictureName::parse(&picture.name)
            .filter(PictureName::within_limits)
            .ok_or_else(|| {
                self.field(
                    "name",
                    format!("{:?} is not the name of a picture the blog keeps", picture.name),
                )
            })?;
        let bytes = BASE64
            .decode(picture.bytes.as_bytes())
            .map_err(|error| self.field("bytes", format!("not base64: {error}")))?;
        let address = PictureAddress { owner: picture.user_id, post: picture.post_id, name };
        if !crate::app::pictures::is_as_named(&address, &bytes) {
            return Err(self.field("bytes", "their SHA-256 is not the one the picture's name says"));
        }
        self.counts.pictures += 1;
        if !self.picture_owners.contains(&address.owner) {
            self.picture_owners.insert(address.owner.clone());
        }
        Ok((address, bytes))
    }

    /// That an item of `kind` with `id`, of the post `post_id`, follows that post, and is the
    /// only one with its id there.
    fn of_current_post(
        &mut self,
        kind: &str,
        post_id: &str,
        id: &str,
    ) -> Result<(), TransferError> {
        let current = match &mut self.current {
            Some(current) if current.post.id == post_id => current,
            _ if self.posts.contains_key(post_id) => {
                let why = format!(
                    "a {kind} of post {post_id:?} after another post's lines: a post's comments, likes and pictures follow it"
                );
                return Err(self.field("postId", why));
            }
            _ => {
                return Err(self.field(
                    "postId",
                    format!("a {kind} of post {post_id:?}, which no line before it holds"),
                ));
            }
        };
        if kind != "picture" {
            model::validate_id(id).map_err(|why| TransferError::Field {
                line: self.line,
                field: "id",
                why: sentence_part(why.to_string()),
            })?;
        }
        // A draft takes no comment or like (the API refuses both), so none is imported on one.
        if matches!(kind, "comment" | "like") && !current.post.status.is_published() {
            let why = format!("a {kind} of post {post_id:?}, a draft, which takes none");
            return Err(self.field("postId", why));
        }
        if !current.ids.insert(id.to_owned()) {
            let field = if kind == "picture" { "name" } else { "id" };
            return Err(
                self.field(field, format!("{id:?} is in post {post_id:?}'s partition already"))
            );
        }
        Ok(())
    }

    /// That the writer of an item is a valid id with a valid name; whether it is a user is
    /// known at the end ([`check_in_store`]).
    fn writer(&mut self, user_id: &str, username: &str) -> Result<(), TransferError> {
        model::validate_id(user_id).map_err(|why| self.field("userId", why))?;
        crate::app::users::valid_username(username.to_owned())
            .map_err(|why| self.field("userUsername", why))?;
        if !self.users.contains_key(user_id) {
            self.elsewhere.entry(user_id.to_owned()).or_insert(self.line);
        }
        Ok(())
    }

    fn date(&self, field: &'static str, date: &str) -> Result<(), TransferError> {
        time::OffsetDateTime::parse(date, &time::format_description::well_known::Rfc3339)
            .map(drop)
            .map_err(|error| {
                self.field(field, format!("{date:?} is not an RFC 3339 date: {error}"))
            })
    }

    /// That the post being read lists as many comments and likes as it says.
    fn end_of_post(&mut self) -> Result<(), TransferError> {
        let Some(current) = self.current.take() else { return Ok(()) };
        let post = current.post.id.clone();
        for (field, said, listed) in [
            ("commentCount", current.post.comment_count, current.comments),
            ("likeCount", current.post.like_count, current.likes),
        ] {
            if said != listed {
                return Err(TransferError::Count { line: current.line, field, post, said, listed });
            }
        }
        Ok(())
    }

    fn last_line(&mut self, value: Value) -> Result<(), TransferError> {
        self.end_of_post()?;
        let end: End = serde_json::from_value(value["end"].clone())
            .map_err(|error| self.malformed(format!("not the last line of an export: {error}")))?;
        if end.counts != self.counts {
            return Err(TransferError::NotWhole(NotWhole::Counts {
                line: self.line,
                said: end.counts,
                found: self.counts,
            }));
        }
        let found = model::hex(&self.digest.clone().finalize());
        if found != end.sha256 {
            return Err(TransferError::NotWhole(NotWhole::Digest {
                line: self.line,
                said: end.sha256,
                found,
            }));
        }
        self.end = Some(self.line);
        self.sha256 = Some(found);
        Ok(())
    }

    fn at_end(&mut self) -> Result<(), TransferError> {
        if self.line == 0 {
            return Err(TransferError::Malformed {
                line: 1,
                why: "the file is empty; an export starts with its header line".into(),
            });
        }
        // Cut short: said as such, rather than as the post whose lines it cut.
        if self.end.is_none() && self.sealed {
            return Err(TransferError::NotWhole(NotWhole::Cut {
                lines: self.line,
                found: self.counts,
            }));
        }
        self.end_of_post()
    }
}

/// A sentence of the API's (`The id must not be empty.`) as a part of the error's own.
fn sentence_part(mut why: String) -> String {
    if why.ends_with('.') {
        why.pop();
    }
    why
}

/// What a line says it is, read without holding any of its values but this one.
#[derive(serde::Deserialize)]
struct Peek<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<std::borrow::Cow<'a, str>>,
}

/// A picture's line: its bytes' base64 read in place in the line (base64 needs no escape).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PictureLine<'a> {
    #[serde(rename = "type")]
    _type: String,
    post_id: String,
    user_id: String,
    name: String,
    #[serde(borrow)]
    bytes: std::borrow::Cow<'a, str>,
}

/// Every item of `input`, checked as an import checks it before it writes anything, but for
/// what needs the store. The last line is left out (the fuzzer's inputs cannot make a digest).
/// Answers how many items and pictures it holds.
pub(crate) fn check_unsealed(input: &[u8]) -> Result<usize, TransferError> {
    let mut reader = Reader::new(std::io::Cursor::new(input), true, false);
    let mut items = 0;
    while reader.next()?.is_some() {
        items += 1;
    }
    Ok(items)
}
