//! From the bytes uploaded to the bytes shown: recognise, bound, decode, encode anew.

use std::io::Cursor;

use image::codecs::gif::{GifDecoder, GifEncoder, Repeat};
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::{AnimationDecoder, DynamicImage, ImageDecoder, ImageEncoder, ImageFormat, ImageReader};
use sha2::{Digest, Sha256};

use crate::model::picture::{Kind, PictureName};

/// How big a picture may be: checked on the upload's size, then on its header, before any
/// pixel is decoded.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The largest upload, in bytes.
    pub max_bytes: usize,
    /// The longest side, in pixels.
    pub max_side: u32,
    /// The most pixels of one frame (width × height).
    pub max_pixels: u64,
    /// The most frames of an animation.
    pub max_frames: usize,
    /// The most pixels of all of an animation's frames together.
    pub max_total_pixels: u64,
}

impl Default for Limits {
    /// A phone's photo fits (48 MP cameras save 12 MP by default; 8,000 px is a panorama's
    /// side), a decoded frame at most 40 MP × 4 bytes = 160 MB, held for the time it is encoded
    /// anew. An animation of at most 300 frames and 40 MP in all.
    fn default() -> Self {
        Limits {
            max_bytes: 10 * 1024 * 1024,
            max_side: crate::model::picture::MAX_SIDE,
            max_pixels: crate::model::picture::MAX_PIXELS,
            max_frames: 300,
            max_total_pixels: 40_000_000,
        }
    }
}

/// Why an upload is not taken as a picture. Nothing of it is kept.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PictureError {
    /// No bytes at all.
    #[error("the upload is empty")]
    Empty,
    /// More bytes than [`Limits::max_bytes`].
    #[error("the picture has {bytes} bytes; at most {max} are taken")]
    TooLarge {
        /// Its size (or as much of it as was read).
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// Its bytes are none of the four formats taken (SVG, HTML, a PDF, BMP...).
    #[error("this is not a JPEG, PNG, WebP or GIF picture{}", .0.as_deref().map(|found| format!(" (it looks like {found})")).unwrap_or_default())]
    NotAPicture(Option<String>),
    /// Its header says it is larger than [`Limits`] allow (a decompression bomb is one).
    #[error("the picture is {width}×{height} pixels; at most {max_side} pixels a side and {max_pixels} pixels in all are taken")]
    TooManyPixels {
        /// Its width, as its header says.
        width: u32,
        /// Its height, as its header says.
        height: u32,
        /// The limit on a side.
        max_side: u32,
        /// The limit on width × height.
        max_pixels: u64,
    },
    /// An animation with more frames, or more pixels in all, than [`Limits`] allow.
    #[error("the animation has more than {max_frames} frames or {max_total_pixels} pixels in all")]
    TooManyFrames {
        /// The limit on frames.
        max_frames: usize,
        /// The limit on all frames' pixels.
        max_total_pixels: u64,
    },
    /// It starts as a picture but cannot be decoded: truncated or corrupt.
    #[error("the picture cannot be read (truncated or damaged): {0}")]
    Unreadable(String),
}

/// A picture as stored: its bytes, their kind and size, and its name.
#[derive(Clone, Debug)]
pub struct Picture {
    /// The bytes encoded anew.
    pub bytes: Vec<u8>,
    /// Their format.
    pub kind: Kind,
    /// Width, in pixels, upright.
    pub width: u32,
    /// Height, in pixels, upright.
    pub height: u32,
    /// What it is stored and served as.
    pub name: PictureName,
}

impl Picture {
    fn new(bytes: Vec<u8>, kind: Kind, width: u32, height: u32) -> Picture {
        let name = PictureName::new(&crate::model::hex(&Sha256::digest(&bytes)), width, height, kind);
        Picture { bytes, kind, width, height, name }
    }
}

/// An upload made ready to show: the picture, and a smaller JPEG for phones where
/// [`PictureName::phone`] says it has one, named as that says.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The picture.
    pub picture: Picture,
    /// The phones' variant.
    pub phone: Option<Picture>,
}

/// Recognises `upload` by its bytes, checks it against `limits`, decodes it and encodes it
/// anew (see the module's documentation). CPU-bound for up to a few hundred milliseconds on a
/// large photo: call it off the async threads.
pub fn prepare(upload: &[u8], limits: &Limits) -> Result<Prepared, PictureError> {
    if upload.len() > limits.max_bytes {
        return Err(PictureError::TooLarge { bytes: upload.len(), max: limits.max_bytes });
    }
    let kind = recognise(upload)?;
    let format = ImageFormat::from_extension(kind.extension()).expect("the four kinds are formats");
    let (width, height) = ImageReader::with_format(Cursor::new(upload), format).into_dimensions().map_err(unreadable)?;
    check_size(width, height, limits)?;
    match kind {
        Kind::Gif if frames(upload, limits)? > 1 => animation(upload, width, height, limits),
        _ => still(upload, kind, limits),
    }
}

/// What kind of picture `upload` is, from its first bytes only (cheap: nothing is decoded).
pub fn recognise(upload: &[u8]) -> Result<Kind, PictureError> {
    if upload.is_empty() {
        return Err(PictureError::Empty);
    }
    // The guess knows formats this build cannot decode (BMP, TIFF...): only the four are taken.
    match image::guess_format(upload) {
        Ok(format) => kind_of(format).ok_or_else(|| PictureError::NotAPicture(Some(format!("{format:?}")))),
        Err(_) => Err(PictureError::NotAPicture(None)),
    }
}

fn check_size(width: u32, height: u32, limits: &Limits) -> Result<(), PictureError> {
    if width.max(height) > limits.max_side || u64::from(width) * u64::from(height) > limits.max_pixels {
        return Err(PictureError::TooManyPixels { width, height, max_side: limits.max_side, max_pixels: limits.max_pixels });
    }
    Ok(())
}

/// How many frames a GIF has, counted without decoding them; past [`Limits`], refused.
fn frames(upload: &[u8], limits: &Limits) -> Result<usize, PictureError> {
    let too_many = || PictureError::TooManyFrames { max_frames: limits.max_frames, max_total_pixels: limits.max_total_pixels };
    let mut options = gif::DecodeOptions::new();
    options.skip_frame_decoding(true);
    let mut decoder = options.read_info(Cursor::new(upload)).map_err(unreadable)?;
    let (mut count, mut pixels) = (0_usize, 0_u64);
    while let Some(frame) = decoder.read_next_frame().map_err(unreadable)? {
        count += 1;
        pixels += u64::from(frame.width) * u64::from(frame.height);
        if count > limits.max_frames || pixels > limits.max_total_pixels {
            return Err(too_many());
        }
    }
    Ok(count)
}

/// A still picture: decoded within the limits, turned upright, encoded anew in its own format
/// (WebP as JPEG, or PNG where it is transparent).
fn still(upload: &[u8], kind: Kind, limits: &Limits) -> Result<Prepared, PictureError> {
    let mut reader = ImageReader::new(Cursor::new(upload)).with_guessed_format().map_err(unreadable)?;
    reader.limits(decoding_limits(limits));
    let mut decoder = reader.into_decoder().map_err(unreadable)?;
    let orientation = decoder.orientation().map_err(unreadable)?;
    let colours = colour_profile(&mut decoder);
    let colours = colours.as_deref();
    let mut image = DynamicImage::from_decoder(decoder).map_err(unreadable)?;
    image.apply_orientation(orientation);
    let stored = match kind {
        Kind::WebP if image.color().has_alpha() => Kind::Png,
        Kind::WebP => Kind::Jpeg,
        other => other,
    };
    let bytes = match stored {
        Kind::Png => png(&image, colours)?,
        Kind::Gif => gif(&image)?,
        Kind::Jpeg | Kind::WebP => jpeg(&image, 90, colours)?,
    };
    let picture = Picture::new(bytes, stored, image.width(), image.height());
    let phone = picture
        .name
        .phone()
        .map(|name| {
            let (width, height) = name.size();
            let smaller = image.thumbnail_exact(width, height);
            jpeg(&smaller, 80, colours).map(|bytes| Picture { bytes, kind: Kind::Jpeg, width, height, name })
        })
        .transpose()?;
    Ok(Prepared { picture, phone })
}

/// An animated GIF: its frames decoded within the limits and written anew (which leaves out its
/// comments and application extensions, where XMP travels).
fn animation(upload: &[u8], width: u32, height: u32, limits: &Limits) -> Result<Prepared, PictureError> {
    let mut decoder = GifDecoder::new(Cursor::new(upload)).map_err(unreadable)?;
    decoder.set_limits(decoding_limits(limits)).map_err(unreadable)?;
    let frames = decoder.into_frames().collect_frames().map_err(unreadable)?;
    let mut bytes = Vec::new();
    {
        let mut encoder = GifEncoder::new(&mut bytes);
        encoder.set_repeat(Repeat::Infinite).map_err(unreadable)?;
        encoder.encode_frames(frames).map_err(unreadable)?;
    }
    Ok(Prepared { picture: Picture::new(bytes, Kind::Gif, width, height), phone: None })
}

fn decoding_limits(limits: &Limits) -> image::Limits {
    let mut decoding = image::Limits::default();
    decoding.max_image_width = Some(limits.max_side);
    decoding.max_image_height = Some(limits.max_side);
    // A frame's pixels, four bytes each, and as much again for the work of decoding.
    decoding.max_alloc = Some(limits.max_pixels * 8);
    decoding
}

/// The largest colour profile kept. A camera's or a phone's (Display P3: about 0.5 KB; a
/// printer's may be a few hundred) fits; a larger one is left out, and the picture shown as sRGB.
const MAX_COLOUR_PROFILE_BYTES: usize = 64 * 1024;

/// The picture's ICC colour profile, kept so that its colours stay as they were taken (a
/// phone's photo in Display P3 would otherwise show duller): the one piece of metadata kept.
/// It describes colours and says nothing of who, where or when.
fn colour_profile(decoder: &mut impl ImageDecoder) -> Option<Vec<u8>> {
    decoder.icc_profile().ok().flatten().filter(|profile| profile.len() <= MAX_COLOUR_PROFILE_BYTES)
}

fn jpeg(image: &DynamicImage, quality: u8, colours: Option<&[u8]>) -> Result<Vec<u8>, PictureError> {
    let mut bytes = Vec::new();
    // JPEG has no transparency: a transparent picture is put on white, as browsers show it.
    let rgb = image.to_rgb8();
    let mut encoder = JpegEncoder::new_with_quality(&mut bytes, quality);
    if let Some(profile) = colours {
        // (Refused only by encoders that cannot carry one; JPEG can.)
        let _ = encoder.set_icc_profile(profile.to_vec());
    }
    rgb.write_with_encoder(encoder).map_err(unreadable)?;
    Ok(bytes)
}

fn png(image: &DynamicImage, colours: Option<&[u8]>) -> Result<Vec<u8>, PictureError> {
    let mut bytes = Vec::new();
    let mut encoder = PngEncoder::new(&mut bytes);
    if let Some(profile) = colours {
        let _ = encoder.set_icc_profile(profile.to_vec());
    }
    image.write_with_encoder(encoder).map_err(unreadable)?;
    Ok(bytes)
}

fn gif(image: &DynamicImage) -> Result<Vec<u8>, PictureError> {
    let mut bytes = Vec::new();
    image.write_with_encoder(GifEncoder::new(&mut bytes)).map_err(unreadable)?;
    Ok(bytes)
}

fn unreadable(error: impl std::fmt::Display) -> PictureError {
    let text = error.to_string();
    // The decoders' own words for a limit met while decoding.
    if text.contains("limit") {
        return PictureError::Unreadable(format!("it is larger than it says ({text})"));
    }
    PictureError::Unreadable(text)
}

/// The kind of a format the decoders recognised, if it is one of the four taken.
fn kind_of(format: ImageFormat) -> Option<Kind> {
    match format {
        ImageFormat::Jpeg => Some(Kind::Jpeg),
        ImageFormat::Png => Some(Kind::Png),
        ImageFormat::WebP => Some(Kind::WebP),
        ImageFormat::Gif => Some(Kind::Gif),
        _ => None,
    }
}
