//! Pictures in posts: what an upload must be to be shown to readers, and what is
//! kept of it.
//!
//! A picture is taken only as JPEG, PNG, WebP or GIF, recognised by its bytes (never by its
//! name or declared type: SVG, HTML and anything else are refused). It must be within
//! [`Limits`], checked from its header before anything is decoded (a small file that says it is
//! huge is refused, not decoded). It is then decoded and **encoded anew** ([`prepare`]), so
//! that nothing but its pixels (and its colour profile, which says how to show them) reaches a
//! reader. So there is no EXIF (a phone's GPS position), no XMP, no comment, no bytes after the
//! image (a JPEG that is also an HTML page). Its orientation is applied first, so a phone's
//! portrait photo stays upright without the EXIF tag that said so. A wide picture also gets a
//! smaller JPEG for phones, made once here.
//!
//! What is stored is named by the SHA-256 of its bytes and its size ([`PictureName`]), under
//! its writer and post ([`PictureAddress`]). So a stored picture never changes under its name
//! and may be cached for good. A page knows its size without reading it, and a post's pictures
//! go with it.

pub(crate) mod blob;
pub(crate) mod directory;
pub(crate) mod error;
mod header;
pub(crate) mod prepare;
pub(crate) mod store;
pub(crate) mod verified;

pub(crate) use crate::model::picture::PictureName;
pub(crate) use blob::BlobStore;
pub(crate) use blob::IMMUTABLE;
pub(crate) use directory::DirectoryStore;
pub(crate) use error::PictureError;
pub(crate) use prepare::Limits;
pub(crate) use prepare::{Picture, Prepared, plan, prepare_planned, recognise};
pub(crate) use store::{PictureStore, PictureStoreError, Usage};
pub(crate) use verified::Verified;
