//! An import's pictures, taken as an upload is taken: each prepared as an upload is prepared
//! (recognised by its bytes, within the same limits and the same memory, decoded and encoded
//! anew: `crate::pictures::prepare`), and stored as preparation makes it. What an upload
//! would refuse is refused, naming its line.
//!
//! A picture the blog prepared comes out of preparation as it went in where its format loses
//! nothing (PNG, GIF), and keeps its name. A JPEG is encoded anew at a loss. So a JPEG (as any
//! picture whose bytes preparation changes) is stored as preparation makes it, under the name
//! its new bytes make. It keeps the same size and kind, with another hash. Its post's Markdown
//! is written with that name in place of the file's (the hash is the only part that changes,
//! and is as long). A picture whose size or kind is not what its name says is refused. A
//! picture's copy in the file is not taken: preparing its picture makes it again. That is its
//! phones' variant (the JPEG 960 pixels wide), its screens' copy (1,440 wide), or a small copy
//! for the lists, each named after its picture's hash. Preparing also makes the copies a file
//! written before they were made lacks.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use crate::app::pictures::Pictures;
use crate::model::picture::{PictureAddress, PictureName};
use crate::pictures::{PictureError, Prepared};

use super::{MAX_LINE_BYTES, TransferError};

/// The most bytes a picture's line can carry: its base64 within a line.
const MAX_PICTURE_BYTES: usize = MAX_LINE_BYTES / 4 * 3;

/// What an import does with a picture's line.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Role {
    /// A copy of another picture of its post (its phones' variant, its screens' copy, a small
    /// copy): made again with that picture.
    Copy,
    /// A picture, stored as preparation makes it, under this name (its own, or the one its
    /// bytes make once prepared).
    Picture(PictureName),
}

/// The file's pictures, prepared during the import's check: what is done with each line, and
/// what each post's Markdown names instead of the file's names. Holds each picture's name,
/// never its bytes.
#[derive(Default)]
pub(super) struct PicturePlan {
    /// Each picture's line: (post, name in the file) → what is done with it.
    roles: HashMap<(String, String), Role>,
    /// The pictures (not copies) of each post: (post, hash) → name in the file.
    by_hash: HashMap<(String, String), PictureName>,
    /// Each post's pictures stored under another hash than the file's: post → (the file's
    /// hash, the stored one).
    renamed: HashMap<String, Vec<(String, String)>>,
    /// Copies whose picture had not come yet: (line, post, name).
    waiting: Vec<(usize, String, PictureName)>,
}

impl PicturePlan {
    /// Prepares the picture of line `line` and notes what is to be done with it; refuses what
    /// an upload would refuse, naming the line.
    pub(super) async fn check(
        &mut self,
        pictures: &Pictures,
        line: usize,
        address: &PictureAddress,
        bytes: Vec<u8>,
    ) -> Result<(), TransferError> {
        let post = address.post.clone();
        let hash = address.name.hash().to_owned();
        let key = (post.clone(), address.name.as_str().to_owned());
        if self
            .by_hash
            .get(&(post.clone(), hash.clone()))
            .is_some_and(|picture| picture.copies().contains(&address.name))
        {
            self.roles.insert(key, Role::Copy);
            return Ok(());
        }
        // Bytes that are not those its name says pass the check only as a copy (named after its
        // picture's hash, `crate::app::pictures::is_as_named`). The copy's picture must come
        // after it, or be missing. A picture 961 to 999 pixels wide sorts after its phones'
        // copy, one 1,441 to 9,999 after its screens' copy, and most after their small copies.
        if crate::model::hex(&Sha256::digest(&bytes)) != hash {
            self.waiting.push((line, post, address.name.clone()));
            self.roles.insert(key, Role::Copy);
            return Ok(());
        }
        let prepared = prepare(pictures, line, address, bytes).await?;
        self.by_hash.insert((post, hash), address.name.clone());
        self.roles.insert(key, Role::Picture(prepared.picture.name));
        Ok(())
    }

    /// Ends the check: each copy is its post's picture's, and each post's Markdown is
    /// told the names it must name anew.
    pub(super) fn finish(&mut self) -> Result<(), TransferError> {
        for (line, post, name) in &self.waiting {
            if !self
                .by_hash
                .get(&(post.clone(), name.hash().to_owned()))
                .is_some_and(|picture| picture.copies().contains(name))
            {
                let why = format!(
                    "{:?} has bytes other than its name says, and is a copy of no picture of post {post:?}",
                    name.as_str()
                );
                return Err(TransferError::Field { line: *line, field: "bytes", why });
            }
        }
        for ((post, name), role) in &self.roles {
            if let Role::Picture(stored) = role
                && stored.as_str() != name
            {
                let file_hash = name[..64].to_owned();
                self.renamed
                    .entry(post.clone())
                    .or_default()
                    .push((file_hash, stored.hash().to_owned()));
            }
        }
        Ok(())
    }

    /// `content`, a post's Markdown, with its pictures named as they are stored.
    pub(super) fn named_as_stored(&self, post: &str, content: String) -> String {
        let Some(renamed) = self.renamed.get(post) else { return content };
        renamed
            .iter()
            .fold(content, |content, (file, stored)| content.replace(file.as_str(), stored))
    }

    /// Writes the picture of line `line` as the check planned it: prepared again, its copies
    /// first (as an upload stores them), under the name the check found; or nothing, for a copy.
    pub(super) async fn write(
        &self,
        pictures: &Pictures,
        line: usize,
        address: &PictureAddress,
        bytes: Vec<u8>,
    ) -> Result<(), TransferError> {
        let key = (address.post.clone(), address.name.as_str().to_owned());
        let name = match self.roles.get(&key) {
            Some(Role::Copy) => return Ok(()),
            Some(Role::Picture(name)) => name,
            None => {
                return Err(TransferError::Malformed {
                    line,
                    why: "a picture the check did not see".into(),
                });
            }
        };
        let prepared = prepare(pictures, line, address, bytes).await?;
        if prepared.picture.name != *name {
            let why = format!(
                "the picture prepared as {}, not as {name} a moment ago",
                prepared.picture.name
            );
            return Err(TransferError::Field { line, field: "bytes", why });
        }
        let stored = PictureAddress { name: name.clone(), ..address.clone() };
        crate::app::pictures::store_prepared(pictures, &stored, &prepared).await?;
        Ok(())
    }
}

/// The picture of line `line` prepared as an upload is, within the blog's limits (but for an
/// upload's size: [`MAX_PICTURE_BYTES`]) and its pictures' memory; of the size and kind its name
/// says.
async fn prepare(
    pictures: &Pictures,
    line: usize,
    address: &PictureAddress,
    bytes: Vec<u8>,
) -> Result<Prepared, TransferError> {
    let refused = |error: PictureError| {
        let why = match error {
            PictureError::OverMemory { .. } => {
                format!("{error}; or import with a larger BLOG_PICTURE_MEMORY_MB")
            }
            _ => error.to_string(),
        };
        TransferError::Field { line, field: "bytes", why }
    };
    let prepared = pictures.prepare_stored(bytes, MAX_PICTURE_BYTES).await.map_err(refused)?;
    let picture = &prepared.picture;
    if (picture.width, picture.height, picture.kind)
        != (address.name.size().0, address.name.size().1, address.name.kind())
    {
        let why = format!(
            "the picture is a {}×{} {}, not what its name {} says",
            picture.width,
            picture.height,
            picture.kind.extension().to_uppercase(),
            address.name
        );
        return Err(TransferError::Field { line, field: "name", why });
    }
    Ok(prepared)
}
