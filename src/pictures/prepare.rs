//! From the bytes uploaded to the bytes shown: recognise, bound, decode, encode anew.

use std::io::Cursor;

use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::{DynamicImage, ImageDecoder, ImageEncoder, ImageError, ImageFormat, ImageReader};
use sha2::{Digest, Sha256};

use super::error::PictureError;
use super::header;
use crate::model::picture::{Kind, PHONE_WIDTH, PictureName, SCREEN_WIDTH, SMALL_SIZES};

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
    /// The most pixels of all of an animation's frames together, each counted as the whole
    /// canvas (a browser draws each on it).
    pub max_total_pixels: u64,
}

impl Default for Limits {
    /// A phone's photo fits (48 MP cameras save 12 MP by default; 8,000 px is a panorama's
    /// side); what it takes to decode one is bounded by the pictures' memory besides
    /// ([`Plan::memory`]). An animation of at most 300 frames and 40 MP in all: 300 frames of
    /// 360 × 360, or 100 of 630 × 630.
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
        let name =
            PictureName::new(&crate::model::hex(&Sha256::digest(&bytes)), width, height, kind);
        Picture { bytes, kind, width, height, name }
    }
}

/// An upload made ready to show: the picture, a smaller JPEG for phones where
/// [`PictureName::phone`] says it has one, one for screens where [`PictureName::screen`] says,
/// and the lists' small copies where [`PictureName::small`] says, each named as that says.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The picture.
    pub picture: Picture,
    /// The phones' variant.
    pub phone: Option<Picture>,
    /// The screens' copy, for a post page's column at two or three device pixels per CSS pixel.
    pub screen: Option<Picture>,
    /// The small copies, for the lists' thumbnails (1×, then 2×, those it has).
    pub small: Vec<Picture>,
}

impl Prepared {
    /// The copies made of the picture: its phones' variant, its screens' copy and its small
    /// copies.
    pub(crate) fn copies(&self) -> impl Iterator<Item = &Picture> {
        self.phone.iter().chain(&self.screen).chain(&self.small)
    }

    /// The bytes of the picture and its copies together: what the writer keeps of it.
    pub(crate) fn stored_bytes(&self) -> u64 {
        std::iter::once(&self.picture)
            .chain(self.copies())
            .map(|picture| picture.bytes.len() as u64)
            .sum()
    }
}

/// What preparing an upload will take, read from its header before any pixel is decoded:
/// its kind, its size, and the memory its decoding and encoding anew will hold at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Its format, by its bytes.
    pub kind: Kind,
    /// Width, as its header says (before its orientation is applied).
    pub width: u32,
    /// Height, as its header says.
    pub height: u32,
    /// The most bytes [`prepare_planned`] holds at once for it (the upload itself not counted).
    pub memory: u64,
}

/// Recognises `upload` by its bytes, checks it against `limits`, decodes it and encodes it
/// anew (see the module's documentation). CPU-bound for up to a few hundred milliseconds on a
/// large photo: call it off the async threads.
pub fn prepare(upload: &[u8], limits: &Limits) -> Result<Prepared, PictureError> {
    let plan = plan(upload, limits)?;
    prepare_planned(upload, &plan, limits)
}

/// Reads what `upload` says of itself ([`Plan`]) and refuses it where that is past `limits`,
/// or where it is cut off (a JPEG without its end marker). Reads the header and the format's
/// structure only (a GIF's frames are counted when they are copied, see [`animation`]).
pub(crate) fn plan(upload: &[u8], limits: &Limits) -> Result<Plan, PictureError> {
    if upload.len() > limits.max_bytes {
        return Err(PictureError::TooLarge { bytes: upload.len(), max: limits.max_bytes });
    }
    let kind = recognise(upload)?;
    let plan = match kind {
        Kind::Jpeg => {
            let frame = header::jpeg_frame(upload)?;
            check_size(frame.width, frame.height, limits)?;
            let pixels = u64::from(frame.width) * u64::from(frame.height);
            // zune-jpeg decodes to grey or RGB (CMYK is turned into RGB). A progressive JPEG's
            // decoder keeps every coefficient until the last scan: two bytes a sample, in blocks.
            let decoded = pixels * if frame.components == 1 { 1 } else { 3 };
            let working = if frame.progressive {
                padded(frame.width, frame.height) * u64::from(frame.components) * 2
            } else {
                0
            };
            // Grey is turned into RGB for the encoder.
            let converted = if frame.components == 1 { pixels * 3 } else { 0 };
            // Decoded once more, before, from a copy with fill after each scan ([`whole_scans`]).
            let copy = upload.len() as u64 + u64::from(frame.scans) * SCAN_FILL.len() as u64;
            let memory =
                still_memory(decoded, working, converted, frame.width, frame.height) + copy;
            Plan { kind, width: frame.width, height: frame.height, memory }
        }
        Kind::Png => {
            let header = header::png_header(upload)?;
            check_size(header.width, header.height, limits)?;
            let decoded = u64::from(header.width)
                * u64::from(header.height)
                * u64::from(header.decoded_bytes_per_pixel);
            // The PNG without its metadata chunks is a copy of the upload, at most.
            let converted =
                upload.len() as u64 + u64::from(header.width) * u64::from(header.height) * 3;
            let memory = still_memory(decoded, 0, converted, header.width, header.height);
            Plan { kind, width: header.width, height: header.height, memory }
        }
        Kind::WebP => {
            let mut reader = ImageReader::with_format(Cursor::new(upload), ImageFormat::WebP);
            reader.limits(header_limits(limits));
            let decoder = reader.into_decoder().map_err(image_error)?;
            let (width, height) = decoder.dimensions();
            check_size(width, height, limits)?;
            let pixels = u64::from(width) * u64::from(height);
            let memory = still_memory(decoder.total_bytes(), 0, pixels * 3, width, height);
            Plan { kind, width, height, memory }
        }
        Kind::Gif => {
            let decoder = gif_decoder(upload, limits)?;
            let (width, height) = (u32::from(decoder.width()), u32::from(decoder.height()));
            check_size(width, height, limits)?;
            // One frame at a time, one byte a pixel (its colours' indexes), within the canvas;
            // as much again for its coded copy, and the GIF written anew (bounded in
            // `animation`).
            let memory = u64::from(width) * u64::from(height) * 2
                + written_gif_bound(upload) as u64
                + FIXED_MEMORY;
            Plan { kind, width, height, memory }
        }
    };
    Ok(plan)
}

/// Decodes and encodes anew an upload [`plan`] read, within the memory it said.
pub(crate) fn prepare_planned(
    upload: &[u8],
    plan: &Plan,
    limits: &Limits,
) -> Result<Prepared, PictureError> {
    match plan.kind {
        Kind::Gif => animation(upload, plan, limits),
        _ => still(upload, plan, limits),
    }
}

/// What the decoders' own tables and buffers, the encoders' and a colour profile take beyond
/// the pixels: a few MiB, measured (BENCHMARKS.md, "Pictures"), with room.
const FIXED_MEMORY: u64 = 8 * 1024 * 1024;

/// The memory of a still picture's preparation. That is the `decoded` pixels, plus the
/// decoder's own `working` copy while it decodes, or else a second copy while its orientation
/// is applied. It adds what the encoder is given where it is not the decoded pixels
/// (`converted`), and the picture written anew (at most about as large as its RGB pixels). It
/// adds the phones' copy, the screens' copy (made and encoded while the phones' is held), and
/// the small copies.
fn still_memory(decoded: u64, working: u64, converted: u64, width: u32, height: u32) -> u64 {
    let pixels = u64::from(width) * u64::from(height);
    let scaled = |wider_than: u32, size: fn(u32, u32) -> (u32, u32)| {
        if width > wider_than {
            let (scaled_width, scaled_height) = size(width, height);
            u64::from(scaled_width) * u64::from(scaled_height) * 4 * 2
        } else {
            0
        }
    };
    let phone = scaled(PHONE_WIDTH, crate::model::picture::phone_size);
    let screen = scaled(SCREEN_WIDTH, crate::model::picture::screen_size);
    let small = if width >= SMALL_SIZES[0].0 && height >= SMALL_SIZES[0].1 {
        small_copies_memory()
    } else {
        0
    };
    decoded + working.max(decoded) + converted + pixels + phone + screen + small + FIXED_MEMORY
}

/// The pixels of a `width` × `height` picture rounded up to whole 16 × 16 blocks (a JPEG's
/// largest MCU).
fn padded(width: u32, height: u32) -> u64 {
    u64::from(width.div_ceil(16) * 16) * u64::from(height.div_ceil(16) * 16)
}

/// The limits a decoder is made with to read a header: no allocation past a header's.
fn header_limits(limits: &Limits) -> image::Limits {
    let mut decoding = image::Limits::default();
    decoding.max_image_width = Some(limits.max_side);
    decoding.max_image_height = Some(limits.max_side);
    decoding.max_alloc = Some(16 * 1024 * 1024);
    decoding
}

/// The limits a decoder is made with to decode: the sides, and the memory the plan said.
fn decoding_limits(limits: &Limits, plan: &Plan) -> image::Limits {
    let mut decoding = image::Limits::default();
    decoding.max_image_width = Some(limits.max_side);
    decoding.max_image_height = Some(limits.max_side);
    decoding.max_alloc = Some(plan.memory);
    decoding
}

/// What kind of picture `upload` is, from its first bytes only (cheap: nothing is decoded).
pub(crate) fn recognise(upload: &[u8]) -> Result<Kind, PictureError> {
    if upload.is_empty() {
        return Err(PictureError::Empty);
    }
    // The guess knows formats this build cannot decode (BMP, TIFF...): only the four are taken.
    match image::guess_format(upload) {
        Ok(format) => {
            kind_of(format).ok_or_else(|| PictureError::NotAPicture(Some(format!("{format:?}"))))
        }
        Err(_) => Err(PictureError::NotAPicture(None)),
    }
}

fn check_size(width: u32, height: u32, limits: &Limits) -> Result<(), PictureError> {
    if width.max(height) > limits.max_side
        || u64::from(width) * u64::from(height) > limits.max_pixels
    {
        return Err(PictureError::TooManyPixels {
            width,
            height,
            max_side: limits.max_side,
            max_pixels: limits.max_pixels,
        });
    }
    Ok(())
}

/// A GIF's decoder, giving each frame as its colours' indexes (never as a canvas of RGBA
/// pixels: a 1 × 1 frame on a 6,000 × 6,000 canvas is one byte, not 144 MB), every frame inside
/// the canvas.
fn gif_decoder<'a>(
    upload: &'a [u8],
    limits: &Limits,
) -> Result<gif::Decoder<Cursor<&'a [u8]>>, PictureError> {
    let mut options = gif::DecodeOptions::new();
    options.set_color_output(gif::ColorOutput::Indexed);
    options.check_frame_consistency(true);
    let frame_bytes =
        std::num::NonZeroU64::new(limits.max_pixels).unwrap_or(std::num::NonZeroU64::MIN);
    options.set_memory_limit(gif::MemoryLimit::Bytes(frame_bytes));
    options.read_info(Cursor::new(upload)).map_err(unreadable)
}

/// The most bytes a GIF is written anew in: its frames are coded again as they were, so about
/// as many as it came in, and twice that is refused as a GIF coded to be larger than it is.
fn written_gif_bound(upload: &[u8]) -> usize {
    upload.len() * 2 + 64 * 1024
}

/// A GIF, still or animated. Each frame is read as its colours' indexes and written anew at
/// once with its own palette, timing and disposal. So one frame at a time is held, never the
/// canvas of each (the image library composes every frame onto a full RGBA canvas). What is not
/// a frame is left out: comments, and the application extensions XMP travels in. Frames are
/// counted, each as the canvas's pixels, before each is decoded.
fn animation(upload: &[u8], plan: &Plan, limits: &Limits) -> Result<Prepared, PictureError> {
    let too_many = || PictureError::TooManyFrames {
        max_frames: limits.max_frames,
        max_total_pixels: limits.max_total_pixels,
    };
    let mut decoder = gif_decoder(upload, limits)?;
    let (width, height) = (decoder.width(), decoder.height());
    let global_palette = decoder.global_palette().map(<[u8]>::to_vec).unwrap_or_default();
    let bound = written_gif_bound(upload);
    let mut encoder =
        gif::Encoder::new(Vec::new(), width, height, &global_palette).map_err(unreadable)?;
    // A browser shows each frame drawn on the whole canvas: a frame costs the canvas's pixels,
    // however small its own rectangle, to whoever shows it (and each frame's CPU here is
    // bounded by it too).
    let canvas = u64::from(width) * u64::from(height);
    let mut count = 0_usize;
    let mut buffer = Vec::new();
    while decoder.next_frame_info().map_err(unreadable)?.is_some() {
        count += 1;
        if count > limits.max_frames || canvas * count as u64 > limits.max_total_pixels {
            return Err(too_many());
        }
        if count == 2 {
            encoder.set_repeat(gif::Repeat::Infinite).map_err(unreadable)?;
        }
        let mut written = decoder.current_frame_info().expect("the frame just read").clone();
        buffer.resize(decoder.buffer_size(), 0);
        decoder.read_into_buffer(&mut buffer).map_err(unreadable)?;
        // The decoder gave its rows in order: they are written in order.
        written.interlaced = false;
        written.buffer = std::borrow::Cow::Borrowed(&buffer);
        if written.palette.is_none() && global_palette.is_empty() {
            return Err(PictureError::Unreadable("a frame of the GIF has no colours".into()));
        }
        encoder.write_frame(&written).map_err(unreadable)?;
        if encoder.get_ref().len() > bound {
            return Err(PictureError::Unreadable(format!(
                "it is larger than it says (its frames make over {bound} bytes)"
            )));
        }
    }
    if count == 0 {
        return Err(PictureError::Unreadable("the GIF has no frames".into()));
    }
    let bytes = encoder.into_inner().map_err(unreadable)?;
    Ok(Prepared {
        picture: Picture::new(bytes, Kind::Gif, plan.width, plan.height),
        phone: None,
        screen: None,
        small: Vec::new(),
    })
}

/// A still picture: decoded within the memory its plan said, turned upright, encoded anew in
/// its own format (WebP as JPEG, or PNG where it is transparent).
fn still(upload: &[u8], plan: &Plan, limits: &Limits) -> Result<Prepared, PictureError> {
    let format =
        ImageFormat::from_extension(plan.kind.extension()).expect("the four kinds are formats");
    let (source, png_profile) = match plan.kind {
        Kind::Png => {
            let parts = header::png_parts(upload, MAX_COLOUR_PROFILE_BYTES)?;
            (parts.bytes, parts.colour_profile)
        }
        _ => (std::borrow::Cow::Borrowed(upload), None),
    };
    let mut reader = ImageReader::with_format(Cursor::new(&source[..]), format);
    reader.limits(decoding_limits(limits, plan));
    let mut decoder = reader.into_decoder().map_err(image_error)?;
    if decoder.dimensions() != (plan.width, plan.height) {
        return Err(PictureError::Unreadable(
            "its header and its decoder disagree on its size".into(),
        ));
    }
    // Its scans' pixels as decoded with fill after each: compared once it is decoded.
    let filled = match plan.kind {
        Kind::Jpeg => Some(pixels_with_scan_fill(upload, plan, limits)?),
        _ => None,
    };
    let orientation = decoder.orientation().map_err(image_error)?;
    let colours = match png_profile {
        Some(profile) => Some(profile),
        None => colour_profile(&mut decoder)?,
    };
    let colours = colours.as_deref();
    let mut image = DynamicImage::from_decoder(decoder).map_err(image_error)?;
    drop(source);
    if filled.is_some_and(|filled| filled != pixels_digest(&image)) {
        return Err(PictureError::Unreadable(
            "the JPEG's coded data ends before its last row: it is cut off".into(),
        ));
    }
    image.apply_orientation(orientation);
    let stored = match plan.kind {
        Kind::WebP if image.color().has_alpha() => Kind::Png,
        Kind::WebP => Kind::Jpeg,
        other => other,
    };
    let bytes = match stored {
        Kind::Png => png(&image, colours)?,
        Kind::Jpeg | Kind::WebP | Kind::Gif => jpeg(&image, 90, colours)?,
    };
    let picture = Picture::new(bytes, stored, image.width(), image.height());
    let smaller = picture.name.phone().map(|name| {
        let (width, height) = name.size();
        (name, image.thumbnail_exact(width, height))
    });
    let phone = smaller
        .as_ref()
        .map(|(name, smaller)| {
            let (width, height) = name.size();
            jpeg(smaller, SCALED_QUALITY, colours).map(|bytes| Picture {
                bytes,
                kind: Kind::Jpeg,
                width,
                height,
                name: name.clone(),
            })
        })
        .transpose()?;
    let screen =
        picture.name.screen().map(|name| scaled_copy(&image, name, colours)).transpose()?;
    // From what the lists showed before (the phones' variant, or the picture): the same pixels
    // as a small copy made later from the stored variant ([`copy_of_stored`]).
    let source = smaller.as_ref().map_or(&image, |(_, smaller)| smaller);
    let small = small_copies(&picture.name, source, colours)?;
    Ok(Prepared { picture, phone, screen, small })
}

/// The quality of the scaled copies' JPEG (the phones' and the screens'): shown at their size
/// in a post's column, where the picture as uploaded is kept at 90.
const SCALED_QUALITY: u8 = 80;

/// `source` scaled to `name`'s size (its proportions kept: [`PictureName::screen`]) and encoded
/// as a JPEG, as the phones' copy is.
fn scaled_copy(
    source: &DynamicImage,
    name: PictureName,
    colours: Option<&[u8]>,
) -> Result<Picture, PictureError> {
    let (width, height) = name.size();
    let scaled = source.thumbnail_exact(width, height);
    let bytes = jpeg(&scaled, SCALED_QUALITY, colours)?;
    Ok(Picture { bytes, kind: Kind::Jpeg, width, height, name })
}

/// The quality of the small copies' JPEG: at the lists' size the loss is not seen. A
/// 12-megapixel photo's 2× copy is about 18 KB at 70 against 20 at 75 and 22 at 80. That was
/// measured on the benches' noisy photo (BENCHMARKS.md, "Thumbnails sized for their box").
const SMALL_QUALITY: u8 = 70;

/// The small copies [`PictureName::small`] says `name` has, made from `source`: the picture as
/// the lists showed it (its phones' variant, or itself).
fn small_copies(
    name: &PictureName,
    source: &DynamicImage,
    colours: Option<&[u8]>,
) -> Result<Vec<Picture>, PictureError> {
    let mut copies = Vec::new();
    for size in SMALL_SIZES {
        let Some(small) = name.small(size) else { continue };
        copies.push(small_copy(source, small, colours)?);
    }
    Ok(copies)
}

/// `source` cropped about its middle to the proportions of `name`'s size (as the stylesheet's
/// `object-fit: cover` crops), scaled to that size and encoded as `name` says.
fn small_copy(
    source: &DynamicImage,
    name: PictureName,
    colours: Option<&[u8]>,
) -> Result<Picture, PictureError> {
    let (width, height) = name.size();
    let (crop_width, crop_height) = cover_crop(source.width(), source.height(), width, height);
    let cropped = source.crop_imm(
        (source.width() - crop_width) / 2,
        (source.height() - crop_height) / 2,
        crop_width,
        crop_height,
    );
    // Catmull-Rom: as sharp as Lanczos at this reduction, and its JPEG a few per cent smaller.
    let scaled = cropped.resize_exact(width, height, image::imageops::FilterType::CatmullRom);
    drop(cropped);
    let bytes = match name.kind() {
        Kind::Png => png(&scaled, colours)?,
        _ => jpeg(&scaled, SMALL_QUALITY, colours)?,
    };
    Ok(Picture { bytes, kind: name.kind(), width, height, name })
}

/// The largest part of a `source_width` × `source_height` picture in the proportions of
/// `width` × `height`.
fn cover_crop(source_width: u32, source_height: u32, width: u32, height: u32) -> (u32, u32) {
    let (source_width_64, source_height_64) = (u64::from(source_width), u64::from(source_height));
    if source_width_64 * u64::from(height) > source_height_64 * u64::from(width) {
        let crop =
            (source_height_64 * u64::from(width) + u64::from(height) / 2) / u64::from(height);
        (u32::try_from(crop).unwrap_or(source_width).clamp(1, source_width), source_height)
    } else {
        let crop = (source_width_64 * u64::from(height) + u64::from(width) / 2) / u64::from(width);
        (source_width, u32::try_from(crop).unwrap_or(source_height).clamp(1, source_height))
    }
}

/// The most bytes making a picture's small copies holds beside its pixels. That is the crop (at
/// most 960 × 720, the 4:3 part of a source at most [`PHONE_WIDTH`] wide, at most 8 bytes a
/// pixel). It adds the scaler's rows (4 floats a pixel, the crop's width by the copy's height),
/// the copy and its RGB for the encoder.
fn small_copies_memory() -> u64 {
    let (width, height) = SMALL_SIZES[SMALL_SIZES.len() - 1];
    let crop = u64::from(PHONE_WIDTH) * u64::from(PHONE_WIDTH) * 3 / 4 * 8;
    let scaling = u64::from(PHONE_WIDTH) * u64::from(height) * 16;
    crop + scaling + u64::from(width) * u64::from(height) * (4 + 3)
}

/// The copy named `copy` of a picture as stored, decoded within the memory of its `plan`
/// ([`plan`]). `stored` is the picture it is made from at upload. For a small copy that is
/// [`PictureName::small`]'s: its phones' variant, or itself where it has none. For the screens'
/// copy it is the picture. For a picture stored before such copies were made at upload. Stored
/// pictures were prepared already: upright, without metadata, whole.
pub(crate) fn copy_of_stored(
    stored: &[u8],
    plan: &Plan,
    limits: &Limits,
    copy: PictureName,
) -> Result<Picture, PictureError> {
    if plan.kind == Kind::Gif {
        return Err(PictureError::Unreadable("an animation has no copy".into()));
    }
    let format =
        ImageFormat::from_extension(plan.kind.extension()).expect("the four kinds are formats");
    let mut reader = ImageReader::with_format(Cursor::new(stored), format);
    reader.limits(decoding_limits(limits, plan));
    let mut decoder = reader.into_decoder().map_err(image_error)?;
    let colours = colour_profile(&mut decoder)?;
    let image = DynamicImage::from_decoder(decoder).map_err(image_error)?;
    if copy.is_small_size() {
        small_copy(&image, copy, colours.as_deref())
    } else {
        scaled_copy(&image, copy, colours.as_deref())
    }
}

/// What is put after each scan's coded data for [`pixels_with_scan_fill`]: 1-bits (0xFF, each
/// followed by the 0x00 that says it is data). There are more of them than a symbol and its
/// extra bits (at most 16 + 15) and then a whole Huffman code can take. No Huffman code is all
/// 1-bits (ITU T.81, Annex C), so a decoder that reads them meets a code that is none.
const SCAN_FILL: [u8; 16] = [
    0xFF, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF, 0x00,
];

/// The digest of the pixels of a JPEG decoded with [`SCAN_FILL`] after its scans' coded data,
/// to compare with those of the JPEG as it is: the same when every scan holds all of its rows.
///
/// A scan whose coded data ends before its last row (a file cut short, with its end marker put
/// back or another scan after it) is not an error to the decoder. The decoder is zune-jpeg,
/// which `image` builds with `strict_mode(false)`, and it fills in what is missing. Data that
/// runs out at the end of the file is counted in `BitStream::overread_by` and said as
/// "Premature end of buffer". That is an error in strict mode only, else the rest is filled
/// with grey (zune-jpeg 0.5, `mcu.rs`, `decode_mcu_ycbcr_baseline`). A marker met inside the
/// scan is taken as its end, and the rows after it are decoded from zeros without a word,
/// strict or not. See `mcu.rs`, `check_stream_marker_after_mcu_width`, which sets `seen_eoi`,
/// then `BitStream::refill`: "fill with zeroes". The marker walk ([`header::jpeg_frame`])
/// cannot tell either: it sees a marker where it expects one. So the decoder's own filling is
/// made to show. It is given 1-bits before the marker instead of the zeros it would make up. A
/// decoder that needs more data than the scan holds reads them, meets no valid code, and gives
/// other pixels; one that does not never reads them.
///
/// Where the decoder must see the marker that ends a scan while it reads the scan's last bits,
/// the fill cannot go. One such place is between a sequential JPEG's scans
/// (`decode_mcu_ycbcr_baseline` goes on to the next scan only on a marker seen so). So only its
/// last scan is filled, and a scan put after the last one its components need is refused by the
/// walk. The other is after a progressive JPEG's first scan (`decode_mcu_ycbcr_progressive`:
/// "Marker missing where expected"). That scan is decoded alone instead, filled. A whole one
/// leaves the fill unread and the decoder, finding no marker, fails. One cut short reads the
/// fill, and the decoder passes over the bad code and gives a picture. One more decoding of
/// each JPEG (two for a progressive one, the first of its first scan only), within the memory
/// of its plan: each decoding's pixels are let go before the next.
fn pixels_with_scan_fill(
    upload: &[u8],
    plan: &Plan,
    limits: &Limits,
) -> Result<[u8; 32], PictureError> {
    let cut = || {
        PictureError::Unreadable(
            "the JPEG's coded data ends before its last row: it is cut off".into(),
        )
    };
    let ends = header::jpeg_scan_ends(upload)?;
    let progressive = header::jpeg_frame(upload)?.progressive;
    let filled_after: &[usize] = match (progressive, ends.split_first()) {
        (true, Some((first, rest))) => {
            let alone = [&upload[..*first], &SCAN_FILL[..], &[0xFF, 0xD9]].concat();
            if decoded(&alone, plan, limits).is_ok() {
                return Err(cut());
            }
            rest
        }
        _ => &ends[ends.len().saturating_sub(1)..],
    };
    let mut filled = Vec::with_capacity(upload.len() + filled_after.len() * SCAN_FILL.len());
    let mut from = 0;
    for end in filled_after {
        filled.extend_from_slice(&upload[from..*end]);
        filled.extend_from_slice(&SCAN_FILL);
        from = *end;
    }
    filled.extend_from_slice(&upload[from..]);
    Ok(pixels_digest(&decoded(&filled, plan, limits)?))
}

/// `jpeg` decoded within the memory of `plan`.
fn decoded(jpeg: &[u8], plan: &Plan, limits: &Limits) -> Result<DynamicImage, PictureError> {
    let mut reader = ImageReader::with_format(Cursor::new(jpeg), ImageFormat::Jpeg);
    reader.limits(decoding_limits(limits, plan));
    reader.decode().map_err(image_error)
}

/// The SHA-256 of a picture's pixels and their layout.
fn pixels_digest(image: &DynamicImage) -> [u8; 32] {
    let mut digest = Sha256::new();
    digest.update(image.width().to_le_bytes());
    digest.update(image.height().to_le_bytes());
    digest.update(format!("{:?}", image.color()).as_bytes());
    digest.update(image.as_bytes());
    digest.finalize().into()
}

/// The largest colour profile kept. A camera's or a phone's (Display P3: about 0.5 KB; a
/// printer's may be a few hundred) fits. A picture with a larger one is refused, saying so: a
/// profile that large is a mistake, or a PNG's chunk made to inflate without end.
pub(crate) const MAX_COLOUR_PROFILE_BYTES: usize = 64 * 1024;

/// The picture's ICC colour profile, kept so that its colours stay as they were taken (a
/// phone's photo in Display P3 would otherwise show duller): the one piece of metadata kept.
/// It describes colours and says nothing of who, where or when.
fn colour_profile(decoder: &mut impl ImageDecoder) -> Result<Option<Vec<u8>>, PictureError> {
    match decoder.icc_profile().map_err(image_error)? {
        Some(profile) if profile.len() > MAX_COLOUR_PROFILE_BYTES => {
            Err(PictureError::ColourProfileTooLarge { max: MAX_COLOUR_PROFILE_BYTES })
        }
        profile => Ok(profile),
    }
}

fn jpeg(
    image: &DynamicImage,
    quality: u8,
    colours: Option<&[u8]>,
) -> Result<Vec<u8>, PictureError> {
    let mut bytes = Vec::new();
    // JPEG has no transparency: a transparent picture is put on white, as browsers show it.
    // Pixels that are RGB already are given as they are, not copied.
    let converted;
    let rgb = match image.as_rgb8() {
        Some(rgb) => rgb,
        None => {
            converted = image.to_rgb8();
            &converted
        }
    };
    let mut encoder = JpegEncoder::new_with_quality(&mut bytes, quality);
    if let Some(profile) = colours {
        // (Refused only by encoders that cannot carry one; JPEG can.)
        let _ = encoder.set_icc_profile(profile.to_vec());
    }
    rgb.write_with_encoder(encoder).map_err(image_error)?;
    Ok(bytes)
}

fn png(image: &DynamicImage, colours: Option<&[u8]>) -> Result<Vec<u8>, PictureError> {
    let mut bytes = Vec::new();
    let mut encoder = PngEncoder::new(&mut bytes);
    if let Some(profile) = colours {
        let _ = encoder.set_icc_profile(profile.to_vec());
    }
    image.write_with_encoder(encoder).map_err(image_error)?;
    Ok(bytes)
}

fn unreadable(error: impl std::fmt::Display) -> PictureError {
    PictureError::Unreadable(error.to_string())
}

/// An image library error: a limit met while decoding says the picture is larger than its
/// header said (the plan's memory is what the decoder was allowed).
fn image_error(error: ImageError) -> PictureError {
    match error {
        ImageError::Limits(limit) => {
            PictureError::Unreadable(format!("it is larger than it says ({limit})"))
        }
        other => PictureError::Unreadable(other.to_string()),
    }
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
